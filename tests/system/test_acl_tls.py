"""The suite with ACLs and mTLS everywhere, driven by the `drover` CLI.

A TLS etcd that requires client certificates; state, broker, deployments
and proxy as `drover serve --acl` subprocesses with server certificates
and a CA (mTLS between every pair, and to etcd); the CLI with
--tls-ca/--tls-cert/--tls-key. Then: bootstrap once, policies and tokens,
denied and allowed mutations, revocation; and the two mismatch reports
(CLI without TLS against the TLS proxy; a service without etcd TLS).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from service_procs import serve

from drover.dev.etcd import EtcdServer
from drover.dev.ports import free_port

pytestmark = pytest.mark.slow


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _certs(d: Path) -> dict[str, str]:
    """A throwaway CA; a cert for 127.0.0.1 usable as server and client."""
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
             "/CN=drover-test-ca", "-keyout", "ca.key", "-out", "ca.crt", cwd=d)
    (d / "node.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                                "extendedKeyUsage=serverAuth,clientAuth\n")
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=drover-node",
             "-keyout", "node.key", "-out", "node.csr", cwd=d)
    _openssl("x509", "-req", "-in", "node.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-CAcreateserial", "-days", "1", "-extfile", "node.ext", "-out", "node.crt", cwd=d)
    return {n: str(d / n) for n in ("ca.crt", "node.crt", "node.key")}


@contextlib.contextmanager
def _serve(service: str, etcd: str, prefix: str, certs: dict[str, str],
           *extra: str) -> Iterator[str]:
    """`drover serve` with ACLs on, mTLS to etcd and TLS on its own listener."""
    with serve(service, etcd, prefix, "--acl",
               "--etcd-ca", certs["ca.crt"], "--etcd-cert", certs["node.crt"],
               "--etcd-key", certs["node.key"],
               "--tls-ca", certs["ca.crt"], "--tls-cert", certs["node.crt"],
               "--tls-key", certs["node.key"], *extra) as address:
        yield address


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str], str]]:
    d = tmp_path_factory.mktemp("acl-tls")
    certs = _certs(d)
    etcd = EtcdServer(name="drover-acl-tls", tls_cert=certs["node.crt"],
                      tls_key=certs["node.key"], client_ca=certs["ca.crt"]).start()
    prefix = f"/t{uuid.uuid4().hex[:12]}/drover"
    try:
        with contextlib.ExitStack() as stack:
            state = stack.enter_context(_serve("state", etcd.endpoint, prefix, certs))
            for svc in ("broker", "deployments"):
                stack.enter_context(_serve(svc, etcd.endpoint, prefix, certs,
                                           "--state-address", state))
            proxy = stack.enter_context(_serve("proxy", etcd.endpoint, prefix, certs))
            yield proxy, certs, etcd.endpoint
    finally:
        etcd.stop()


def drover(*args: str, address: str, certs: dict[str, str] | None, token: str = "",
           stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DROVER_")}
    env.update({"DROVER_ADDR": address, "COLUMNS": "200"})
    if certs:
        env.update({"DROVER_TLS_CA": certs["ca.crt"], "DROVER_TLS_CERT": certs["node.crt"],
                    "DROVER_TLS_KEY": certs["node.key"]})
    if token:
        env["DROVER_TOKEN"] = token
    return subprocess.run([sys.executable, "-m", "drover.cli.main", *args], input=stdin,
                          capture_output=True, text=True, timeout=60, check=False, env=env)


def _bootstrap(proxy: str, certs: dict[str, str]) -> dict[str, str]:
    deadline = time.monotonic() + 40
    while True:  # the proxy may not have discovered a state replica yet
        r = drover("acl", "bootstrap", "--json", address=proxy, certs=certs)
        transient = any(w in r.stderr for w in ("UNAVAILABLE", "cannot reach", "NO_SERVER"))
        if r.returncode == 0 or not transient or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert r.returncode == 0, r.stderr
    out: dict[str, str] = json.loads(r.stdout)
    return out


def test_acl_over_mtls_end_to_end(suite: tuple[str, dict[str, str], str],
                                  tmp_path: Path) -> None:
    proxy, certs, _ = suite
    boot = _bootstrap(proxy, certs)
    assert set(boot) == {"accessor_id", "secret_id"}
    mgmt = boot["secret_id"]
    again = drover("acl", "bootstrap", address=proxy, certs=certs)
    assert again.returncode == 1 and "ACL_ALREADY_BOOTSTRAPPED" in again.stderr

    # Anonymous: default deny, one clear line.
    anon = drover("operator", "scheduler", "pause", address=proxy, certs=certs)
    assert anon.returncode == 1 and "ACL_PERMISSION_DENIED" in anon.stderr
    assert len(anon.stderr.strip().splitlines()) == 1

    policy = tmp_path / "readonly.yaml"
    policy.write_text('namespace:\n  "*": {policy: read}\noperator: {policy: read}\n')
    r = drover("acl", "policy", "apply", "readonly", str(policy), address=proxy, certs=certs,
               token=mgmt)
    assert r.returncode == 0, r.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("namespace: {default: {policy: admin}}\n")
    r = drover("acl", "policy", "apply", "bad", str(bad), address=proxy, certs=certs, token=mgmt)
    assert r.returncode == 1 and "INVALID_POLICY" in r.stderr and "policy must be" in r.stderr
    r = drover("acl", "token", "create", "--name", "ro", "--policy", "readonly", "--json",
               address=proxy, certs=certs, token=mgmt)
    assert r.returncode == 0, r.stderr
    ro = json.loads(r.stdout)
    reader = ro["secret_id"]

    me = drover("acl", "token", "self", "--json", address=proxy, certs=certs, token=reader)
    assert me.returncode == 0 and json.loads(me.stdout)["accessor_id"] == ro["accessor_id"]
    listed = drover("acl", "token", "list", "--verbose", address=proxy, certs=certs, token=mgmt)
    assert listed.returncode == 0 and ro["accessor_id"] in listed.stdout
    assert reader not in listed.stdout and mgmt not in listed.stdout
    assert drover("acl", "policy", "list", address=proxy, certs=certs,
                  token=mgmt).stdout.count("readonly") == 1

    # Read-only reads but cannot mutate; management can.
    assert drover("eval", "list", address=proxy, certs=certs, token=reader).returncode == 0
    denied = drover("operator", "scheduler", "pause", address=proxy, certs=certs, token=reader)
    assert denied.returncode == 1 and "ACL_PERMISSION_DENIED" in denied.stderr
    assert reader not in denied.stderr
    for verb in ("pause", "resume"):
        ok = drover("operator", "scheduler", verb, address=proxy, certs=certs, token=mgmt)
        assert ok.returncode == 0, ok.stderr
    create = drover("acl", "token", "create", "--name", "x", "--policy", "readonly",
                    address=proxy, certs=certs, token=reader)
    assert create.returncode == 1 and "ACL_PERMISSION_DENIED" in create.stderr

    # Revocation.
    r = drover("acl", "token", "revoke", ro["accessor_id"], address=proxy, certs=certs,
               token=mgmt)
    assert r.returncode == 0, r.stderr
    deadline = time.monotonic() + 5
    while True:
        gone = drover("eval", "list", address=proxy, certs=certs, token=reader)
        if gone.returncode == 1 or time.monotonic() > deadline:
            break
    assert gone.returncode == 1 and "ACL_TOKEN_INVALID" in gone.stderr
    assert reader not in gone.stderr


def test_a_cli_without_tls_reports_the_mismatch_in_one_line(
    suite: tuple[str, dict[str, str], str],
) -> None:
    proxy, _, _ = suite
    r = drover("eval", "list", "--timeout", "3", address=proxy, certs=None)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "TLS mismatch" in lines[0] and "--tls-ca" in lines[0], r.stderr


def test_a_service_without_etcd_tls_reports_the_mismatch_in_one_line(
    suite: tuple[str, dict[str, str], str],
) -> None:
    _, _, etcd = suite
    r = subprocess.run([sys.executable, "-m", "drover.cli.main", "serve", "state", "--etcd",
                        etcd, "--listen", f"127.0.0.1:{free_port()}", "--log-level", "ERROR"],
                       capture_output=True, text=True, timeout=60, check=False,
                       env={k: v for k, v in os.environ.items() if not k.startswith("DROVER_")})
    assert r.returncode != 0
    assert "Traceback" not in r.stderr, r.stderr
    lines = [line for line in r.stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and "TLS mismatch" in lines[0] and "etcd" in lines[0], r.stderr
