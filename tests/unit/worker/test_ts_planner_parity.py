"""The TypeScript worker's planner (workers/typescript) against the
reference planner: random snapshots (job types, versions with in-place and
destructive changes, canaries, deployments in every status, lost, failed,
complete, migrating and unhealthy-marked allocations, reschedule policies
and trackers, down, draining and ineligible nodes, plan size caps) are
planned by both, and the plans must be the same: every stop and update,
every placement (its node, name, version, deployment, canary flag,
previous allocation, reschedule tracker), every follow-up evaluation, what
is queued and whether there is more. Both leave the candidate nodes in the
snapshot's order (no shuffle), so binpacking's choices are compared too.
Needs `make ts-worker` (make test builds it first)."""

from __future__ import annotations

import base64
import difflib
import json
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

from google.protobuf.duration_pb2 import Duration

from drover.api.types.v1 import (
    allocation_pb2,
    deployment_pb2,
    evaluation_pb2,
    job_pb2,
    node_pb2,
)
from drover.worker import reschedule
from drover.worker.plan import Plan, Snapshot
from drover.worker.planner import compute_plan
from drover.worker.resources import Vec, is_live

HELPER = Path(__file__).resolve().parents[3] / "workers/typescript/dist/test_helpers/plan_json.js"
NOW = 1_800_000_000.0
SCENARIOS = 1000
DEP_STATUSES = (
    deployment_pb2.DEPLOYMENT_STATUS_RUNNING, deployment_pb2.DEPLOYMENT_STATUS_PAUSED,
    deployment_pb2.DEPLOYMENT_STATUS_FAILED, deployment_pb2.DEPLOYMENT_STATUS_SUCCESSFUL,
    deployment_pb2.DEPLOYMENT_STATUS_CANCELLED)
CLIENT = (allocation_pb2.ALLOC_CLIENT_STATUS_PENDING, allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING,
          allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING, allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING,
          allocation_pb2.ALLOC_CLIENT_STATUS_COMPLETE, allocation_pb2.ALLOC_CLIENT_STATUS_FAILED,
          allocation_pb2.ALLOC_CLIENT_STATUS_FAILED, allocation_pb2.ALLOC_CLIENT_STATUS_LOST)


def _secs(s: float) -> Duration:
    return reschedule.duration(s)


def _group(rng: random.Random, name: str, image: str, kind: int, tight: bool) -> job_pb2.TaskGroup:
    tg = job_pb2.TaskGroup(name=name, count=rng.randint(0, 6), tasks=[job_pb2.Task(
        name="t", driver="sim", config={"image": image},
        resources=job_pb2.Resources(cpu=200000 if tight else 100, memory_mb=300))])
    if rng.random() < 0.8:
        tg.update.CopyFrom(job_pb2.UpdateStrategy(max_parallel=rng.randint(0, 3),
                                                  canary=rng.choice((0, 0, 1, 2))))
    if kind != job_pb2.JOB_TYPE_SYSTEM and rng.random() < 0.5:
        block = job_pb2.ReschedulePolicy(delay=_secs(rng.choice((5, 30))),
                                         delay_function=rng.choice(reschedule.DELAY_FUNCTIONS),
                                         max_delay=_secs(120))
        if rng.random() < 0.5:
            block.attempts = rng.randint(1, 3)
            block.interval.CopyFrom(_secs(3600))
            block.unlimited = False
        tg.reschedule.CopyFrom(block)
    return tg


def _jobs(rng: random.Random) -> list[job_pb2.Job]:
    kind = rng.choice((job_pb2.JOB_TYPE_SERVICE,) * 3 + (job_pb2.JOB_TYPE_BATCH,) * 2
                      + (job_pb2.JOB_TYPE_SYSTEM,))
    tight = rng.random() < 0.08
    names = ["g", "h"] if rng.random() < 0.3 else ["g"]
    out, image = [], "v0"
    for v in range(rng.randint(0, 2) + 1):
        if v and rng.random() < 0.6:
            image = f"v{v}"
        out.append(job_pb2.Job(id="web", namespace="default", type=kind, priority=50, version=v,
                               datacenters=["dc1"], job_modify_index=10 + v,
                               task_groups=[_group(rng, n, image, kind, tight) for n in names]))
    if rng.random() < 0.05:
        out[-1].stop = True
    return out


def _alloc(rng: random.Random, i: int, jobs: list[job_pb2.Job], nodes: list[str],
           dep: deployment_pb2.Deployment | None) -> allocation_pb2.Allocation:
    j = rng.choice(jobs)
    tg = rng.choice(j.task_groups)
    a = allocation_pb2.Allocation(
        id=f"a{i}", namespace="default", job_id="web", job_version=j.version,
        task_group=tg.name, name=f"web.{tg.name}[{rng.randint(0, 7)}]",
        node_id=rng.choice([*nodes, "gone"]),
        desired_status=(allocation_pb2.ALLOC_DESIRED_STATUS_RUN if rng.random() < 0.85
                        else allocation_pb2.ALLOC_DESIRED_STATUS_STOP),
        client_status=rng.choice(CLIENT), resources=job_pb2.Resources(cpu=100, memory_mb=300),
        modify_index=100 + i)
    a.modify_time.CopyFrom(reschedule.timestamp(NOW - rng.randint(0, 300)))
    if dep is not None and rng.random() < 0.6:
        a.deployment_id = dep.id
    if rng.random() < 0.7:
        a.deployment_status.canary = rng.random() < 0.3
        if rng.random() < 0.7:
            a.deployment_status.healthy = rng.random() < 0.7
    if rng.random() < 0.1:
        a.desired_transition.migrate = True
        if rng.random() < 0.5:  # the drainer's mark of a batch one
            a.desired_transition.migrate_disable_placement = True
    if rng.random() < 0.1:
        a.desired_transition.reschedule = True
    if a.client_status == allocation_pb2.ALLOC_CLIENT_STATUS_FAILED:
        a.finished_at.CopyFrom(reschedule.timestamp(NOW - rng.choice((0.5, 3, 10, 40, 200))))
        a.followup_eval_id = rng.choice(("", "", "e1", "other"))
    if rng.random() < 0.3:
        for k in range(rng.randint(1, 3)):
            a.reschedule_tracker.events.append(allocation_pb2.RescheduleEvent(
                reschedule_time=reschedule.timestamp(NOW - 100 * (k + 1)),
                prev_alloc_id=f"p{k}", prev_node_id=rng.choice(nodes), delay=_secs(5 * (k + 1))))
    return a


def _scenario(rng: random.Random) -> tuple[Snapshot, int]:
    jobs = _jobs(rng)
    job = jobs[-1] if rng.random() > 0.03 else None
    nodes = []
    for i in range(5):
        n = node_pb2.Node(id=f"n{i}", datacenter="dc1" if rng.random() < 0.9 else "dc2",
                          status=node_pb2.NODE_STATUS_READY, modify_index=i,
                          resources=job_pb2.Resources(cpu=100000, memory_mb=100000))
        if rng.random() < 0.2:
            n.status = rng.choice([node_pb2.NODE_STATUS_DOWN, node_pb2.NODE_STATUS_DOWN,
                                   node_pb2.NODE_STATUS_DISCONNECTED,
                                   node_pb2.NODE_STATUS_INITIALIZING])
        if rng.random() < 0.15:
            n.drain = True
        if rng.random() < 0.1:
            n.scheduling_eligibility = node_pb2.NODE_SCHEDULING_ELIGIBILITY_INELIGIBLE
        nodes.append(n)
    dep = None
    if rng.random() < 0.6:
        dep = deployment_pb2.Deployment(id="d1", job_id="web", status=rng.choice(DEP_STATUSES),
                                        job_version=max(0, jobs[-1].version - (rng.random() < 0.1)))
        for tg in jobs[-1].task_groups:
            dep.task_groups[tg.name].desired_canaries = tg.update.canary
            dep.task_groups[tg.name].desired_total = tg.count
            dep.task_groups[tg.name].promoted = rng.random() < 0.4
    allocs = [_alloc(rng, i, jobs, [n.id for n in nodes], dep) for i in range(rng.randint(0, 12))]
    used: dict[str, Vec] = {}
    for a in allocs:
        if is_live(a):
            used[a.node_id] = used.get(a.node_id, Vec()) + Vec.of(a.resources)
    snap = Snapshot("default", "web", job, {j.version: j for j in jobs[:-1]}, dep, allocs, nodes,
                    used, eval_id="e1", now=NOW)
    return snap, rng.choice((4, 8, 20, 1000))


class _Unshuffled(random.Random):
    """The candidates in the snapshot's order (the helper's random source
    does the same): both planners then look at the nodes alike."""

    def shuffle(self, x: Any) -> None:  # type: ignore[override]
        return None


def _b64(msg: Any) -> str:
    return base64.b64encode(msg.SerializeToString()).decode()


def _request(snap: Snapshot, max_ops: int) -> str:
    return json.dumps({
        "job": None if snap.job is None else _b64(snap.job),
        "versions": [_b64(v) for v in snap.versions.values()],
        "deployment": None if snap.deployment is None else _b64(snap.deployment),
        "allocs": [_b64(a) for a in snap.allocs], "nodes": [_b64(n) for n in snap.nodes],
        "nodeUsed": {k: {"cpu": v.cpu, "memoryMb": v.memory_mb} for k, v in snap.node_used.items()},
        "evalId": snap.eval_id, "now": snap.now, "maxOps": max_ops})


def _summary(plan: Plan) -> dict[str, Any]:
    def own(a: allocation_pb2.Allocation) -> allocation_pb2.Allocation:
        out = allocation_pb2.Allocation()
        out.CopyFrom(a)
        return out

    return {"placements": [own(a) for a in plan.placements],
            "updates": [own(a) for a in plan.updates],
            "evaluations": list(plan.evaluations), "queued": dict(plan.queued), "more": plan.more}


def _ts_summary(got: dict[str, Any]) -> dict[str, Any]:
    def decode(cls: Any, items: list[str]) -> list[Any]:
        return [cls.FromString(base64.b64decode(s)) for s in items]

    plan = Plan(placements=decode(allocation_pb2.Allocation, got["placements"]),
                updates=decode(allocation_pb2.Allocation, got["updates"]),
                evaluations=decode(evaluation_pb2.Evaluation, got["evaluations"]),
                queued=got["queued"], more=got["more"])
    return _summary(plan)


def _text(summary: dict[str, Any]) -> str:
    """A plan summary as text, one field a line (pytest diffs it line by line)."""
    lines = []
    for key, value in summary.items():
        if isinstance(value, list):
            lines += [f"{key}[{i}] {line}" for i, m in enumerate(value)
                      for line in str(m).splitlines()]
        else:
            lines.append(f"{key} {value}")
    return "\n".join(lines)


def test_the_typescript_planner_makes_the_reference_planners_plans() -> None:
    assert HELPER.is_file(), f"{HELPER} missing: run `make ts-worker`"
    rng = random.Random(38)
    scenarios = [_scenario(rng) for _ in range(SCENARIOS)]
    node = shutil.which("node")
    assert node is not None, "node is not on PATH"
    out = subprocess.run([node, str(HELPER)], input="\n".join(_request(s, m) for s, m in scenarios)
                         + "\n", capture_output=True, text=True, timeout=120, check=True)
    answers = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(answers) == len(scenarios), out.stderr
    kinds: dict[str, int] = {}
    for n, ((snap, max_ops), got) in enumerate(zip(scenarios, answers, strict=True)):
        ids = (f"new-{i}" for i in range(1 << 30))
        ref = compute_plan(snap, rng=_Unshuffled(), new_id=ids.__next__, max_ops=max_ops)
        want, have = _summary(ref), _ts_summary(got)
        diff = list(difflib.unified_diff(_text(want).splitlines(), _text(have).splitlines(),
                                         "reference", "typescript", lineterm="", n=2))
        assert not diff, f"scenario {n} (max_ops {max_ops}):\n" + "\n".join(diff)
        for key in ("placements", "updates", "evaluations"):
            kinds[key] = kinds.get(key, 0) + bool(want[key])
        kinds["queued"] = kinds.get("queued", 0) + bool(want["queued"])
        kinds["more"] = kinds.get("more", 0) + want["more"]
    # the scenarios reach every kind of decision, many times
    assert all(v >= 20 for v in kinds.values()), kinds
