"""The node drainer's pure decisions (Nomad's drainer: watch_jobs.go handleTaskGroup,
drainer.go deadlines and completion)."""

from __future__ import annotations

from drover.api.types.v1 import allocation_pb2, job_pb2, node_pb2
from drover.deployments.core.drainer import Completion, decide

RUN = allocation_pb2.ALLOC_DESIRED_STATUS_RUN
STOP = allocation_pb2.ALLOC_DESIRED_STATUS_STOP
RUNNING = allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING
COMPLETE = allocation_pb2.ALLOC_CLIENT_STATUS_COMPLETE
NOW = 10_000.0


def node(nid: str = "n0", deadline: int = 3600, started: float = NOW - 1,
         ignore_system: bool = False) -> node_pb2.Node:
    n = node_pb2.Node(id=nid, status=node_pb2.NODE_STATUS_READY, drain=True)
    if deadline < 0:
        n.drain_strategy.force = True
    else:
        n.drain_strategy.deadline.FromSeconds(deadline)
    n.drain_strategy.ignore_system_jobs = ignore_system
    n.drain_strategy.started_at.FromNanoseconds(int(started * 1e9))
    if deadline > 0:
        n.drain_strategy.force_deadline.FromNanoseconds(int((started + deadline) * 1e9))
    return n


def job(jid: str = "web", count: int = 3, max_parallel: int | None = None,
        jtype: int = job_pb2.JOB_TYPE_SERVICE) -> job_pb2.Job:
    tg = job_pb2.TaskGroup(name="g", count=count)
    if max_parallel is not None:
        tg.migrate.max_parallel = max_parallel
    return job_pb2.Job(id=jid, namespace="default", type=jtype,  # type: ignore[arg-type]
                       task_groups=[tg])


def alloc(i: int, node_id: str = "n0", jid: str = "web", healthy: bool | None = True,
          desired: int = RUN, client: int = RUNNING,
          migrate: bool = False) -> allocation_pb2.Allocation:
    a = allocation_pb2.Allocation(id=f"{jid}-{i}", namespace="default", job_id=jid,
                                  task_group="g", name=f"{jid}.g[{i}]", node_id=node_id,
                                  desired_status=desired, client_status=client)  # type: ignore[arg-type]
    if healthy is not None:
        a.deployment_status.healthy = healthy
    if migrate:
        a.desired_transition.migrate = True
    return a


def ids(p: object) -> list[str]:
    return sorted(a.id for v in p.migrate.values() for a in v)  # type: ignore[attr-defined]


def test_max_parallel_one_marks_one_of_three_healthy_allocations() -> None:
    allocs = [alloc(0), alloc(1), alloc(2)]
    p = decide(NOW, [node()], {("default", "web"): job()}, {("default", "web"): allocs})
    assert ids(p) == ["web-0"]
    assert p.complete == [] and p.next_deadline == NOW - 1 + 3600


def test_max_parallel_two_marks_two() -> None:
    allocs = [alloc(i) for i in range(3)]
    p = decide(NOW, [node()], {("default", "web"): job(max_parallel=2)},
               {("default", "web"): allocs})
    assert ids(p) == ["web-0", "web-1"]


def test_the_next_leaves_only_once_the_replacement_is_healthy() -> None:
    # web-0 was marked; the worker stopped it and placed web-3 elsewhere.
    moving = [alloc(0, desired=STOP, migrate=True), alloc(1), alloc(2),
              alloc(3, node_id="n1", healthy=None)]
    p = decide(NOW, [node()], {("default", "web"): job()}, {("default", "web"): moving})
    assert ids(p) == []
    moving[3].deployment_status.healthy = True
    p = decide(NOW, [node()], {("default", "web"): job()}, {("default", "web"): moving})
    assert ids(p) == ["web-1"]


def test_a_marked_allocation_not_yet_moved_holds_the_group() -> None:
    allocs = [alloc(0, migrate=True), alloc(1), alloc(2)]
    p = decide(NOW, [node()], {("default", "web"): job()}, {("default", "web"): allocs})
    assert ids(p) == []


def test_an_unhealthy_group_releases_nothing() -> None:
    allocs = [alloc(0), alloc(1), alloc(2, node_id="n1", healthy=None)]
    p = decide(NOW, [node()], {("default", "web"): job()}, {("default", "web"): allocs})
    assert ids(p) == []


def test_max_parallel_zero_waits_for_the_deadline_which_marks_the_rest_and_completes() -> None:
    allocs = [alloc(i) for i in range(3)]
    jobs = {("default", "web"): job(max_parallel=0)}
    assert ids(decide(NOW, [node()], jobs, {("default", "web"): allocs})) == []
    late = node(deadline=60, started=NOW - 61)
    p = decide(NOW, [late], jobs, {("default", "web"): allocs})
    assert ids(p) == ["web-0", "web-1", "web-2"]
    assert p.complete == [Completion("n0", True)]


def test_a_force_drain_marks_everything_at_once() -> None:
    allocs = [alloc(i) for i in range(3)]
    p = decide(NOW, [node(deadline=-1)], {("default", "web"): job()},
               {("default", "web"): allocs})
    assert len(ids(p)) == 3 and p.complete == [Completion("n0", True)]


def test_batch_allocations_are_never_picked_before_the_deadline() -> None:
    allocs = [alloc(i, jid="b", healthy=None) for i in range(2)]
    jobs = {("default", "b"): job("b", count=2, jtype=job_pb2.JOB_TYPE_BATCH)}
    p = decide(NOW, [node()], jobs, {("default", "b"): allocs})
    assert ids(p) == [] and p.complete == []


def test_system_jobs_are_drained_last_then_the_drain_completes() -> None:
    jobs = {("default", "web"): job(count=1),
            ("default", "sys"): job("sys", count=1, jtype=job_pb2.JOB_TYPE_SYSTEM)}
    sys_alloc = alloc(0, jid="sys", healthy=None)
    p = decide(NOW, [node()], jobs, {("default", "web"): [alloc(0, healthy=True)],
                                     ("default", "sys"): [sys_alloc]})
    # count 1, max_parallel 1: healthy 1 - (1 - 1) = 1 -> the service one leaves; sys stays
    assert ids(p) == ["web-0"] and p.complete == []
    done = alloc(0, desired=STOP, client=COMPLETE, migrate=True)
    p = decide(NOW, [node()], jobs, {("default", "web"): [done, alloc(1, node_id="n1")],
                                     ("default", "sys"): [sys_alloc]})
    assert ids(p) == ["sys-0"] and p.complete == [Completion("n0", False)]


def test_ignore_system_jobs_leaves_them_running_even_at_the_deadline() -> None:
    jobs = {("default", "sys"): job("sys", count=1, jtype=job_pb2.JOB_TYPE_SYSTEM)}
    allocs = {("default", "sys"): [alloc(0, jid="sys", healthy=None)]}
    p = decide(NOW, [node(ignore_system=True)], jobs, allocs)
    assert ids(p) == [] and p.complete == [Completion("n0", False)]
    p = decide(NOW, [node(deadline=-1, ignore_system=True)], jobs, allocs)
    assert ids(p) == [] and p.complete == [Completion("n0", True)]


def test_an_empty_node_completes_its_drain() -> None:
    p = decide(NOW, [node()], {}, {})
    assert p.complete == [Completion("n0", False)]


def test_a_node_waits_for_its_stopping_allocations_to_finish() -> None:
    stopping = alloc(0, desired=STOP, migrate=True)  # client still running
    p = decide(NOW, [node()], {("default", "web"): job(count=1)},
               {("default", "web"): [stopping, alloc(1, node_id="n1")]})
    assert p.complete == [] and ids(p) == []


def test_a_stopped_or_gone_job_leaves_at_once() -> None:
    j = job()
    j.stop = True
    allocs = [alloc(i) for i in range(3)]
    assert len(ids(decide(NOW, [node()], {("default", "web"): j},
                          {("default", "web"): allocs}))) == 3
    assert len(ids(decide(NOW, [node()], {("default", "web"): None},
                          {("default", "web"): allocs}))) == 3
