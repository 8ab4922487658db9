"""The README's walk-through and failover drill on `drover dev`, as a
newcomer runs them: a canary rollout; a second rollout started, then the
broker leader and the simulated nodes killed with -9 (the suite logs and
restarts them, the other broker takes over, the rollout finishes); every
table at 80 columns; and `drover dev` started again at once after a stop
(TIME_WAIT sockets do not count as busy ports), its state kept in
``--data-dir``. Bounded: every wait has a
deadline, the whole test about a minute on an idle box."""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

import pytest
from dev_suite import Dev, cli, deployment, deployment_id
from polling import until

from drover.dev.supervisor import free_layout

pytestmark = pytest.mark.slow

#: Every table of the walk-through, checked at 80 columns ({dep}: the
#: second rollout's deployment id, as printed: 8 characters).
TABLES = (
    ("job", "list"), ("job", "status"), ("deployment", "list"),
    ("deployment", "status", "{dep}"), ("eval", "list"), ("eval", "list", "-n", "*"),
    ("node", "list"), ("alloc", "list"), ("alloc", "list", "-n", "*"),
    ("operator", "members"), ("broker", "stats"), ("acl", "token", "list"),
)


def test_the_walkthrough_survives_its_drills(tmp_path: Path) -> None:
    offset, lay = free_layout()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DROVER_")}
    env.update(DROVER_ADDR=lay.address("proxy"), COLUMNS="80")

    drover = cli(env)

    data = tmp_path / "data"
    dev = Dev(offset, tmp_path / "dev-1.log", data)
    try:
        dev.wait_up()
        until(lambda: len(json.loads(drover("node", "list", "--json").stdout or "[]")) == 3,
               60, "three simulated nodes")
        # the walk-through: a canary, auto-promoted
        first = drover("job", "run", "--detach", "examples/canary.yaml")
        assert first.returncode == 0, first.stderr
        dep1 = deployment_id(first.stdout)
        until(lambda: deployment(drover, dep1).get("status") == "successful", 90, "v0 rolled out")
        second = drover("job", "run", "--detach", "examples/canary-v2.yaml")
        assert second.returncode == 0, second.stderr
        dep2 = deployment_id(second.stdout)

        # the drill: kill -9 the broker leader and the simulated nodes mid-rollout
        members = json.loads(drover("operator", "members", "--json").stdout)
        [leader] = [s["address"] for lst in members["lists"] if lst["service"] == "broker"
                    for s in lst["servers"] if s["leader"]]
        name = re.search(rf"^(broker-\d+) +{re.escape(leader)} ", dev.text(), re.M).group(1)  # type: ignore[union-attr]
        os.kill(dev.pid(name), signal.SIGKILL)
        os.kill(dev.pid("sim"), signal.SIGKILL)
        until(lambda: f"{name} exited (killed by SIGKILL); restarting" in dev.text()
               and "sim exited (killed by SIGKILL); restarting" in dev.text(), 30,
               "the supervisor logs both deaths")
        until(lambda: re.search(rf"^{name} restarted \(pid \d+", dev.text(), re.M), 30,
               f"{name} restarted")

        def new_leader() -> bool:
            got = json.loads(drover("operator", "members", "--json").stdout or "{}")
            return any(s["leader"] and s["address"] != leader for lst in got.get("lists", [])
                       if lst["service"] == "broker" for s in lst["servers"])

        until(new_leader, 30, "the other broker leads")
        # the rollout started before the drill finishes after it
        until(lambda: deployment(drover, dep2).get("status") == "successful", 120,
               "v1 rolled out after the drill")
        assert drover("broker", "stats").returncode == 0  # reads answer again

        # every table of the walk-through fits 80 columns
        for args in TABLES:
            out = drover(*(a.format(dep=dep2[:8]) for a in args))
            if args[0] == "acl":  # ACLs are off in this run: one clear line
                assert out.returncode == 1 and "ACL_DISABLED" in out.stderr, out.stderr
                continue
            assert out.returncode == 0, (args, out.stderr)
            wide = [line for line in out.stdout.splitlines() if len(line) > 80]
            assert not wide, (args, wide)
            assert "…" not in out.stdout.split("\n", 1)[0], (args, out.stdout)  # whole headers
        assert dev.proc.poll() is None, "the suite stopped"
    finally:
        assert dev.stop() == 0, dev.text()[-3000:]

    # started again at once: the ports left in TIME_WAIT are not "in use";
    # on the same --data-dir, etcd's state (the job) is still there
    again = Dev(offset, tmp_path / "dev-2.log", data)
    try:
        again.wait_up()
        assert "already in use" not in again.text()
        listed = json.loads(drover("job", "list", "--json").stdout)
        assert [j["id"] for j in listed] == ["web"]
    finally:
        assert again.stop() == 0
