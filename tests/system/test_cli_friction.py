"""Newcomer friction, tried as a new user would: client options before the
subcommand, --json with default values, lists scoped to the `default`
namespace unless "*" is asked, `deployment list --order`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import cast


def drover(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "DROVER_ADDR"}
    return subprocess.run([sys.executable, "-m", "drover.cli.main", *args],
                          capture_output=True, text=True, timeout=60, check=False,
                          env={**base, "COLUMNS": "200", **(env or {})})


def _job(tmp_path: Path, job_id: str, namespace: str) -> Path:
    spec = tmp_path / f"{job_id}.yaml"
    spec.write_text(f"id: {job_id}\nnamespace: {namespace}\ntype: JOB_TYPE_SERVICE\n"
                    "priority: 50\ndatacenters: [dc1]\n"
                    "taskGroups:\n  - name: web\n    count: 1\n    update: {maxParallel: 1}\n")
    return spec


def test_client_options_before_or_after_the_subcommand(state_address: str,
                                                       tmp_path: Path) -> None:
    run = uuid.uuid4().hex[:6]
    spec = _job(tmp_path, f"glob-{run}", "default")
    before = drover("--address", state_address, "job", "run", "--detach", str(spec))
    assert before.returncode == 0, before.stderr
    after = drover("job", "status", f"glob-{run}", "--address", state_address, "--json")
    assert after.returncode == 0, after.stderr
    # A global flag beats the environment; the command's own flag beats both.
    wrong = {"DROVER_ADDR": "127.0.0.1:1"}
    assert drover("--address", state_address, "--json", "job", "status", f"glob-{run}",
                  env=wrong).returncode == 0
    refused = drover("--address", state_address, "job", "status", f"glob-{run}",
                     "--address", "127.0.0.1:1")
    assert refused.returncode != 0 and "127.0.0.1:1" in refused.stderr
    # --json shows default values: version 0 and stop false are there.
    job = json.loads(drover("--json", "--address", state_address, "job", "status",
                            f"glob-{run}").stdout)["job"]
    assert job["version"] in (0, "0") and job["stop"] is False


def test_lists_are_the_default_namespace_unless_star(state_address: str,
                                                     tmp_path: Path) -> None:
    run = uuid.uuid4().hex[:6]
    for ns, name in (("default", f"a-{run}"), ("other", f"b-{run}"), ("default", f"c-{run}")):
        ran = drover("job", "run", "--detach", str(_job(tmp_path, name, ns)),
                     "--address", state_address)
        assert ran.returncode == 0, ran.stderr

    def jobs_of(*args: str) -> list[str]:
        out = drover("deployment", "list", "--json", "--address", state_address, *args)
        assert out.returncode == 0, out.stderr
        return [d["job_id"] for d in json.loads(out.stdout) if d["job_id"].endswith(run)]

    assert jobs_of() == [f"c-{run}", f"a-{run}"]  # newest first, as Nomad's
    assert jobs_of("--order", "asc") == [f"a-{run}", f"c-{run}"]
    assert sorted(jobs_of("-n", "*")) == [f"a-{run}", f"b-{run}", f"c-{run}"]
    assert jobs_of("-n", "other") == [f"b-{run}"]


def test_unique_id_prefixes_short_ids_and_whole_ones_with_verbose(state_address: str,
                                                           tmp_path: Path) -> None:
    run = uuid.uuid4().hex[:6]
    ran = drover("--json", "--address", state_address, "job", "run", "--detach",
                 str(_job(tmp_path, f"p-{run}", "default")))
    assert ran.returncode == 0, ran.stderr
    registered = json.loads(ran.stdout)
    dep, ev = registered["deployment_id"], registered["eval_id"]
    narrow = {"COLUMNS": "50"}
    table = drover("deployment", "list", "--prefix", dep[:8], "--address", state_address,
                   env=narrow)
    # Nomad's shape: 8 characters in tables, taken back as a prefix ...
    assert dep[:8] in table.stdout and dep not in table.stdout, table.stdout
    verbose = drover("deployment", "list", "--verbose", "--prefix", dep[:8], "--address",
                     state_address, env=narrow)
    assert dep in verbose.stdout, verbose.stdout  # ... --verbose: whole, on one line
    status = drover("deployment", "status", dep[:8], "--json", "--address", state_address)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["id"] == dep
    shown = drover("eval", "status", ev[:8], "--json", "--address", state_address)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["evaluation"]["id"] == ev
    job = drover("job", "status", f"p-{run[:4]}", "--json", "--address", state_address)
    assert job.returncode == 0, job.stderr
    assert json.loads(job.stdout)["job"]["id"] == f"p-{run}"
    missing = drover("deployment", "status", "zzzzzzzz", "--address", state_address)
    assert missing.returncode == 1 and "NOT_FOUND" in missing.stderr


def test_an_ambiguous_prefix_lists_the_matches() -> None:
    from drover.cli.client import CommandFailed
    from drover.cli.prefix import unique

    assert unique("ab", ["abc"], "deployment") == "abc"
    assert unique("abc", ["abc", "abcd"], "deployment") == "abc"  # an exact id wins
    assert unique("zz", [], "deployment") == "zz"  # the call says NOT_FOUND
    try:
        unique("a", ["a1", "a2"], "evaluation")
    except CommandFailed as e:
        assert "matches several: a1, a2" in e.message
    else:
        raise AssertionError("an ambiguous prefix was taken")


def test_every_prefix_kind_names_a_real_list_call() -> None:
    from google.protobuf.message import Message

    from drover.api.state.v1 import state_pb2
    from drover.cli.prefix import _LISTS

    service = state_pb2.DESCRIPTOR.services_by_name["StateService"]
    for kind, (method, request, field) in _LISTS.items():
        rpc = service.methods_by_name[method]
        descriptor = cast(type[Message], request).DESCRIPTOR  # _LISTS says only `type`
        assert rpc.input_type.full_name == descriptor.full_name, kind
        assert "prefix" in descriptor.fields_by_name, kind
        assert field in rpc.output_type.fields_by_name, kind
