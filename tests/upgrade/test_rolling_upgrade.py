"""A rolling upgrade from the previous release, then a rollback to it.

The previous release (releases.toml: its tag, in a checkout and venv of its
own) runs the cluster of `drover dev` with two replicas of every service, the
worker and simulated nodes, and a workload (jobs registered, rollouts,
scale changes, batch jobs, evaluations flowing). Then one process at a time
is replaced by this tree's code (state replicas, brokers, watchers, proxies,
worker, nodes), the workload running throughout. Judged:

- nothing lost: every job, evaluation, deployment, allocation and node the
  old release wrote is listed by the new one, and every object in etcd
  decodes with the new code, ids set, no field it does not know;
- mixed versions serve side by side: no client call fails beyond an
  UNAVAILABLE (``OUTCOME_UNKNOWN`` included) that a retry got past;
- deployments finish (none failed, none left active), and a new rollout
  after the upgrade succeeds.

Then the same, backwards: each process replaced by the old release again,
in the reverse order, clients first (docs/upgrade.md states what a rollback
does), the old code decoding
everything the new one wrote, and a rollout on the old release succeeding.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mixed_cluster import ORDER, MixedCluster
from old_release import Installed, install, previous_release, this_tree
from workload import FAILED, SERVICE_JOBS, Workload

from drover.api.types.v1 import deployment_pb2
from drover.rpc.failover import FailoverChannel

pytestmark = [pytest.mark.upgrade, pytest.mark.timeout(900)]

DECODE = Path(__file__).with_name("decode_store.py")
#: Seconds the workload runs on a version before anything is replaced, and
#: between two replacements (work flows through each mixed state).
WARM_UP = 15.0
BETWEEN = 2.0
SETTLE_TIMEOUT = 120.0
ROLLOUT_TIMEOUT = 90.0


@pytest.fixture(scope="module")
def old() -> Iterator[Installed]:
    """The previous release installed in a temp dir (removed after)."""
    where = Path(tempfile.mkdtemp(prefix="drover-upgrade-"))
    try:
        yield install(previous_release(), where)
    finally:
        shutil.rmtree(where, ignore_errors=True)


def stored(etcd_url: str) -> list[list[str]]:
    """Every ``[key, value]`` (base64) under /drover/v1/, read from etcd's
    JSON gateway (no client library: the versions may differ in theirs)."""
    body = json.dumps({"key": base64.b64encode(b"/drover/v1/").decode(),
                       "range_end": base64.b64encode(b"/drover/v10").decode()}).encode()
    req = urllib.request.Request(f"{etcd_url}/v3/kv/range", data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        kvs = json.load(resp).get("kvs", [])
    return [[kv["key"], kv.get("value", "")] for kv in kvs]


def decode_with(version: Installed, pairs: list[list[str]]) -> dict[str, Any]:
    done = subprocess.run([version.python, str(DECODE)], input=json.dumps(pairs),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"decoding with {version.version} failed: {done.stderr[-2000:]}"
    report: dict[str, Any] = json.loads(done.stdout)
    return report


async def roll(cluster: MixedCluster, wl: Workload, to: Installed,
               log: list[str], rollback: bool) -> None:
    """Replace every process, one at a time, by ``to``, the workload running:
    servers first in an upgrade, clients first in a rollback (no client is
    ever newer than the servers it calls; docs/upgrade.md)."""
    for i, name in enumerate(reversed(ORDER) if rollback else ORDER):
        away = await asyncio.to_thread(cluster.replace, name, to)
        wl.phase = f"{to.version} x{i + 1}"
        log.append(f"  {name:<14} -> {to.version} in {away:4.1f} s")
        await asyncio.sleep(BETWEEN)
        assert not cluster.exited(), f"died during the roll: {cluster.exited()}"


async def judge_settled(wl: Workload, version: str, log: list[str]) -> None:
    started = time.monotonic()
    active = await wl.settled(SETTLE_TIMEOUT)
    if active:
        stuck = [await wl.describe_deployment(d) for d in active[:3]]
        raise AssertionError(f"on {version}: {len(active)} deployments still active after "
                             f"{SETTLE_TIMEOUT:g} s: " + "; ".join(stuck))
    pending = await wl.drained(SETTLE_TIMEOUT)
    assert pending == 0, (f"on {version}: {pending} evaluations still pending: "
                          + await wl.describe_evaluations('status == "pending"'))
    failed_evals = await wl.evaluations('status == "failed"')
    assert failed_evals == 0, (f"on {version}: {failed_evals} evaluations failed: "
                               + await wl.describe_evaluations('status == "failed"'))
    deps = await wl.deployments()
    failed = [d for d in deps if d.status == FAILED]
    assert not failed, f"on {version}: deployments failed: " + "; ".join(
        f"{d.job_id} v{d.job_version}: {d.status_description}" for d in failed)
    by_status = Counter(deployment_pb2.DeploymentStatus.Name(d.status) for d in deps)
    log.append(f"  settled in {time.monotonic() - started:.1f} s; deployments {dict(by_status)}")


async def judge_rollout(wl: Workload, version: str, log: list[str]) -> None:
    started = time.monotonic()
    resp = await wl.rollout(0, image=f"web:after-{version}")
    assert resp is not None, f"registering a rollout on {version} failed: {wl.failures[-1:]}"
    status = await wl.deployed("svc-0", resp.version, ROLLOUT_TIMEOUT)
    assert status == "DEPLOYMENT_STATUS_SUCCESSFUL", \
        f"a rollout on {version}: svc-0 v{resp.version} ended {status}"
    log.append(f"  new rollout on {version}: svc-0 v{resp.version} successful in "
               f"{time.monotonic() - started:.1f} s")


def judge_store(cluster: MixedCluster, version: Installed, log: list[str],
                unknown_ok: bool) -> None:
    """Every stored object decodes with ``version``; fields it does not know
    fail an upgrade (the newer code would drop what the older wrote), not a
    rollback (the older code ignores what the newer added)."""
    assert cluster.etcd is not None
    report = decode_with(version, stored(cluster.etcd.url))
    assert not report["problems"], (f"{version.version} cannot read what is stored: "
                                    + "; ".join(report["problems"][:10]))
    assert unknown_ok or not report["unknown"], (
        f"{version.version} does not know fields of what is stored: "
        + "; ".join(report["unknown"][:10]))
    unknown = len(report["unknown"])
    log.append(f"  {version.version} decodes everything stored: {report['counts']}"
               + (f"; {unknown} with fields it does not know" if unknown else ""))


def judge_kept(before: dict[str, set[str]], after: dict[str, set[str]], version: str,
               log: list[str]) -> None:
    lost = {kind: sorted(ids - after[kind])[:5] for kind, ids in before.items()
            if ids - after[kind]}
    assert not lost, f"{version} does not list objects written before: {lost}"
    log.append(f"  {version} lists all {sum(map(len, before.values()))} objects written "
               f"before ({', '.join(f'{k} {len(v)}' for k, v in before.items())})")


async def move(cluster: MixedCluster, wl: Workload, to: Installed, warm_up: float,
               log: list[str], rollback: bool) -> None:
    """The workload running, rollouts in progress: every process replaced by
    ``to``, one at a time; then the judges, on ``to``."""
    stop = asyncio.Event()
    runner = asyncio.create_task(wl.run(stop))
    try:
        await asyncio.sleep(warm_up)
        for i in range(SERVICE_JOBS):  # rollouts in progress as the roll starts
            await wl.rollout(i)
        before = await wl.ids()
        active = await wl.deployments('status == "running"')
        log.append(f"  {len(active)} deployments running as the roll to {to.version} starts")
        started = time.monotonic()
        await roll(cluster, wl, to, log, rollback)
        log.append(f"  {'rolled back' if rollback else 'upgraded'} in "
                   f"{time.monotonic() - started:.1f} s")
    finally:
        stop.set()
        with contextlib.suppress(asyncio.CancelledError):
            await runner
    assert not wl.failures, "client calls failed: " + "; ".join(wl.failures[:10])
    await judge_settled(wl, to.version, log)
    judge_kept(before, await wl.ids(), to.version, log)
    await asyncio.to_thread(judge_store, cluster, to, log, rollback)
    await judge_rollout(wl, to.version, log)
    assert not wl.failures, "client calls failed: " + "; ".join(wl.failures[:10])


async def test_rolling_upgrade_and_back(old: Installed, tmp_path: Path) -> None:
    new = this_tree()
    log = [f"rolling upgrade {old.version} -> {new.version} -> {old.version}"]
    t0 = time.monotonic()
    data = Path(tempfile.mkdtemp(prefix="drover-upgrade-data-"))
    cluster = MixedCluster(data_dir=data)
    try:
        await asyncio.to_thread(cluster.start, old)
        log.append(f"  cluster of {old.version} up in {time.monotonic() - t0:.1f} s")
        async with FailoverChannel(cluster.proxies.split(",")) as ch:
            wl = Workload(ch, phase=old.version)
            await wl.setup()
            await move(cluster, wl, new, WARM_UP, log, rollback=False)
            await move(cluster, wl, old, WARM_UP / 3, log, rollback=True)
            retried = Counter(f"{c.method} {c.code} {c.reason}".strip()
                              for c in wl.calls if c.code != "OK")
            ok = sum(1 for c in wl.calls if c.code == "OK")
            log.append(f"  calls: {ok} OK, retried {dict(retried) or 'none'}; "
                       f"{wl.steps} workload steps, {wl.batches} batch jobs")
    finally:
        await asyncio.to_thread(cluster.stop)
        log.append(f"  total {time.monotonic() - t0:.1f} s")
        with contextlib.suppress(OSError):
            shutil.copytree(cluster.log_dir, tmp_path / "logs")
        shutil.rmtree(data, ignore_errors=True)
        (tmp_path / "summary.txt").write_text("\n".join(log) + "\n")
        print("\n".join(log))
