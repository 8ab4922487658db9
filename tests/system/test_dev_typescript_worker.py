"""`drover dev --worker typescript`: the README's canary rollout with the
TypeScript worker (workers/typescript, built by `make ts-worker`) in place
of the Python one. Version 0 places all three at once; version 1 (the
README's canary-v2 with auto_promote off, so the promotion is by hand)
places one canary beside the three old allocations and nothing more; once
promoted the old ones are replaced one at a time (max_parallel 1) until the
deployment is successful. The cluster then holds exactly three running,
healthy allocations of version 1, the canary among them, each name once,
and the old three stopped. Judged on what the cluster holds."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from dev_suite import ROOT, Dev, cli, deployment, deployment_id
from polling import until

from drover.dev.supervisor import free_layout
from drover.dev.workers import TS_MAIN

pytestmark = pytest.mark.slow


def test_the_canary_rollout_with_the_typescript_worker(tmp_path: Path) -> None:
    assert TS_MAIN.is_file(), f"{TS_MAIN} missing: run `make ts-worker`"
    offset, lay = free_layout()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DROVER_")}
    env.update(DROVER_ADDR=lay.address("proxy"))

    drover = cli(env)

    def status(dep: str) -> dict[str, Any]:
        return deployment(drover, dep)

    def allocs() -> list[dict[str, Any]]:
        out = drover("alloc", "list", "--json")
        assert out.returncode == 0, out.stderr
        return [a for a in json.loads(out.stdout) if a["job_id"] == "web"]

    def run(path: Path | str) -> str:
        out = drover("job", "run", "--detach", str(path))
        assert out.returncode == 0, out.stderr
        return deployment_id(out.stdout)

    v2 = tmp_path / "canary-v2.yaml"
    v2.write_text((ROOT / "examples/canary-v2.yaml").read_text()
                  .replace("auto_promote: true", "auto_promote: false"))
    dev = Dev(offset, tmp_path / "dev.log", tmp_path / "data", "--worker", "typescript")
    try:
        dev.wait_up()
        assert re.search(r"^worker +typescript scheduler", dev.text(), re.M), dev.text()[-2000:]
        until(lambda: len(json.loads(drover("node", "list", "--json").stdout or "[]")) == 3,
               60, "three simulated nodes")
        dep0 = run("examples/canary.yaml")
        until(lambda: status(dep0).get("status") == "successful", 90, "v0 rolled out")
        assert sorted(a["name"] for a in allocs()) == [f"web.frontend[{i}]" for i in range(3)]

        dep1 = run(v2)

        def canary_healthy() -> bool:
            tg = status(dep1).get("task_groups", {}).get("frontend", {})
            return len(tg.get("placed_canaries", [])) == 1 and tg.get("healthy_allocs") == 1

        until(canary_healthy, 60, "the canary placed and healthy")
        waiting = [a for a in allocs() if a["desired_status"] == "run"]
        # one canary beside the three old ones, nothing replaced before promotion
        assert sorted(a["job_version"] for a in waiting) == ["0", "0", "0", "1"], waiting
        assert status(dep1)["status"] == "running"
        promoted = drover("deployment", "promote", dep1)
        assert promoted.returncode == 0, promoted.stderr
        until(lambda: status(dep1).get("status") == "successful", 90, "v1 rolled out")

        final = allocs()
        live = [a for a in final if a["desired_status"] == "run"]
        assert len(live) == 3, live
        assert {a["job_version"] for a in live} == {"1"}
        assert all(a["client_status"] == "running" and a["deployment_status"]["healthy"]
                   for a in live), live
        assert len({a["name"] for a in live}) == 3, live
        canary = status(dep1)["task_groups"]["frontend"]["placed_canaries"]
        assert canary[0] in {a["id"] for a in live}
        old = [a for a in final if a["job_version"] == "0"]
        assert len(old) == 3 and all(a["desired_status"] == "stop" for a in old), old
        assert dev.proc.poll() is None, "the suite stopped"
    finally:
        assert dev.stop() == 0, dev.text()[-3000:]
