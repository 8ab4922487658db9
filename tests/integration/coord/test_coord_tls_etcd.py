"""coord talks to an etcd that requires TLS with client certificates."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from drover.config import EtcdSettings, TlsFiles
from drover.coord import EtcdUnavailable, Session, connect
from drover.coord.etcd_kv import EtcdKV
from drover.dev.etcd import EtcdServer


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _certs(d: Path) -> dict[str, str]:
    """A throwaway CA, a server cert for 127.0.0.1 and a client cert."""
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
             "/CN=drover-test-ca", "-keyout", "ca.key", "-out", "ca.crt", cwd=d)
    (d / "server.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                                  "extendedKeyUsage=serverAuth,clientAuth\n")
    (d / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
    for name in ("server", "client"):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN=drover-{name}",
                 "-keyout", f"{name}.key", "-out", f"{name}.csr", cwd=d)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                 "-CAcreateserial", "-days", "1", "-extfile", f"{name}.ext",
                 "-out", f"{name}.crt", cwd=d)
    return {n: str(d / n) for n in ("ca.crt", "server.crt", "server.key",
                                     "client.crt", "client.key")}


@pytest.fixture(scope="module")
def tls_etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[EtcdServer, dict]]:
    d = tmp_path_factory.mktemp("tls")
    certs = _certs(d)
    server = EtcdServer(name="drover-tls", tls_cert=certs["server.crt"],
                        tls_key=certs["server.key"], client_ca=certs["ca.crt"]).start()
    try:
        yield server, certs
    finally:
        server.stop()


async def test_tls_client_with_certificate(tls_etcd: tuple[EtcdServer, dict]) -> None:
    server, certs = tls_etcd
    tls = TlsFiles(ca=certs["ca.crt"], cert=certs["client.crt"], key=certs["client.key"])
    settings = EtcdSettings(endpoints=(server.endpoint,), tls=tls, dial_timeout=5)
    client = await connect(settings, purpose="control")
    try:
        await client.put(b"/tls/probe", b"ok")
        got = await client.get(b"/tls/probe")
        assert got is not None and got.value == b"ok"
        session = await Session.open(EtcdKV(client), ttl=2)  # keepalive stream over TLS too
        assert session.lease_id > 0
        await session.close()
    finally:
        await client.close()


async def test_plaintext_client_is_refused(tls_etcd: tuple[EtcdServer, dict]) -> None:
    server, _ = tls_etcd
    with pytest.raises(EtcdUnavailable):
        await connect(EtcdSettings(endpoints=(server.endpoint,), dial_timeout=1),
                      purpose="control")


async def test_client_without_certificate_is_refused(tls_etcd: tuple[EtcdServer, dict]) -> None:
    server, certs = tls_etcd
    settings = EtcdSettings(endpoints=(server.endpoint,), tls=TlsFiles(ca=certs["ca.crt"]),
                            dial_timeout=1)
    with pytest.raises(EtcdUnavailable):
        await connect(settings, purpose="control")
