"""transact's one retry policy, on a state service over MemoryKV: plan
optimistically, commit, on a conflict sync and re-plan (where the rules
refuse by cause), bounded commits, FenceLost never retried."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from drover.api.types.v1 import deployment_pb2, evaluation_pb2, job_pb2
from drover.coord.fence import Fence
from drover.coord.kv import Put
from drover.errors import Conflict, EvaluationChanged, FenceLost
from drover.state.app import StateService
from drover.state.cache import marker_put
from drover.state.core import codec
from drover.state.core.plan import PlanBuilder, WriteContext, WritePlan
from drover.state.core.validate import validate_job
from drover.state.core.view import View
from drover.state.errors import PlanStale
from drover.state.evaluations.core import evals
from drover.state.jobs.core import register as jobs
from drover.state.pipeline import ATTEMPTS, transact


def recording(planner: Callable[[View], WritePlan]) -> tuple[Callable[[View], WritePlan],
                                                              list[bool]]:
    """The planner, and the freshness of every view it was called with."""
    seen: list[bool] = []

    def wrapped(view: View) -> WritePlan:
        seen.append(view.fresh)
        return planner(view)
    return wrapped, seen


def ctx(service: StateService) -> WriteContext:
    return service.writes.write_context()


async def put_eval(service: StateService, ev: evaluation_pb2.Evaluation) -> int:
    """Written straight to the store, as another replica would (with the
    revision marker every object write puts, which is what a sync waits for)."""
    key = service.cache.keys.key(codec.EVALUATIONS, ev.namespace, ev.id)
    res = await service.cache.store.txn([], [Put(key, codec.encode(ev)),
                                             marker_put(service.cache.keys)])
    return res.revision


EV = evaluation_pb2.Evaluation(id="e1", namespace="default", type="service",
                               status=evaluation_pb2.EVALUATION_STATUS_PENDING)


async def test_a_conflict_replans_on_a_fresh_view_where_the_rule_refuses(
        service: StateService) -> None:
    first = await put_eval(service, EV)
    await service.cache.sync()
    # Changed behind this replica's back: the cache has not seen it yet.
    changed = await put_eval(service, EV)
    assert service.cache.revision < changed
    upd = evaluation_pb2.Evaluation()
    upd.CopyFrom(EV)
    upd.status, upd.modify_index = evaluation_pb2.EVALUATION_STATUS_COMPLETE, first
    c = ctx(service)
    planner, seen = recording(lambda v: evals.plan_update(v, c, [upd], []))
    with pytest.raises(EvaluationChanged) as err:
        await transact(service.cache, service.writer, planner)
    assert seen == [False, True]  # optimistic, then re-planned after the sync
    assert err.value.metadata["modify_index"] == str(changed)


async def test_a_lagging_cache_does_not_refuse_an_update_the_compares_allow(
        service: StateService) -> None:
    """The cache lags a create (GONE on its view): the update's compares are
    the caller's, so it commits at once, with no sync and no re-plan."""
    rev = await put_eval(service, EV)
    upd = evaluation_pb2.Evaluation()
    upd.CopyFrom(EV)
    upd.modify_index = rev
    c = ctx(service)
    planner, seen = recording(lambda v: evals.plan_update(v, c, [upd], []))
    assert service.cache.tables[codec.EVALUATIONS].objects.get("default/e1") is None
    resp = await transact(service.cache, service.writer, planner)
    assert seen == [False]
    assert resp.index > rev


def always_conflicting(service: StateService, **build: Any) -> Callable[[View], WritePlan]:
    def planner(view: View) -> WritePlan:
        plan = PlanBuilder(service.cache.keys)
        plan.compare(b"never/there", "mod", 99)  # never holds
        plan.put(codec.EVALUATIONS, "default", "x", EV, None)
        return plan.build(lambda rev: rev, conflict="still moving", **build)
    return planner


async def test_conflicts_are_retried_a_bounded_number_of_times(service: StateService) -> None:
    before = await service.cache.store.revision()
    planner, seen = recording(always_conflicting(service))
    with pytest.raises(Conflict, match="still moving"):
        await transact(service.cache, service.writer, planner)
    assert seen == [False] + [True] * (ATTEMPTS - 1)
    assert await service.cache.store.revision() == before  # nothing written


async def test_a_plan_whose_compares_are_the_callers_is_not_retried(
        service: StateService) -> None:
    planner, seen = recording(always_conflicting(
        service, retry=False, final_conflict=lambda: PlanStale("moved")))
    with pytest.raises(PlanStale):
        await transact(service.cache, service.writer, planner, sync_first=True)
    assert seen == [True]


async def test_fence_lost_is_never_retried(service: StateService) -> None:
    leader_key = f"{service.cache.keys.base}election/broker/a"
    res = await service.cache.store.txn([], [Put(leader_key.encode(), b"me")])
    deposed = Fence(leader_key, res.revision + 1)  # another term holds the key
    c = ctx(service)
    planner, seen = recording(lambda v: evals.plan_upsert(v, c, [EV], None))
    with pytest.raises(FenceLost):
        await transact(service.cache, service.writer, planner, deposed)
    assert seen == [False]
    assert service.cache.tables[codec.EVALUATIONS].objects.get("default/e1") is None


async def test_a_plan_that_writes_nothing_makes_no_txn(service: StateService) -> None:
    await put_eval(service, EV)
    await service.cache.sync()
    before = await service.cache.store.revision()
    c = ctx(service)
    planner, seen = recording(lambda v: evals.plan_delete_ids(v, c, "default", ["e1"], True))
    resp = await transact(service.cache, service.writer, planner)
    assert (resp.deleted, resp.index) == (1, before)
    assert seen == [False]
    assert await service.cache.store.revision() == before


async def test_a_successful_commit_answers_with_its_revision(service: StateService) -> None:
    c = ctx(service)
    resp = await transact(service.cache, service.writer,
                          lambda v: evals.plan_upsert(v, c, [EV], None))
    assert list(resp.eval_ids) == ["e1"]
    assert resp.index == await service.cache.sync()


async def test_a_refusal_on_a_stale_view_replans_and_the_fresh_view_decides(
        service: StateService) -> None:
    """enforce_index judged on a cache that has not seen the job yet would
    refuse (JOB_MODIFY_INDEX_MISMATCH); it re-plans after a sync instead,
    and the fresh view lets the register through."""
    job = validate_job(job_pb2.Job(id="web", datacenters=["dc1"],
                                   task_groups=[job_pb2.TaskGroup(name="g", count=1)]))
    key = service.cache.keys.key(codec.JOBS, "default", "web")
    res = await service.cache.store.txn([], [Put(key, codec.encode(job)),
                                             marker_put(service.cache.keys)])
    changed = job_pb2.Job()
    changed.CopyFrom(job)
    changed.task_groups[0].count = 2
    c = ctx(service)
    planner, seen = recording(lambda v: jobs.plan_register(
        v, c, changed, enforce_index=True, job_modify_index=res.revision))
    assert service.cache.tables[codec.JOBS].objects.get("default/web") is None  # lags
    resp = await transact(service.cache, service.writer, planner)
    assert seen == [False, True]
    assert resp.version == 1 and resp.index > res.revision


async def test_a_plans_events_are_the_changes_its_txn_makes(service: StateService) -> None:
    """The plan says which objects it puts and deletes: exactly what the
    store's watch then reports for the txn (less the revision marker)."""
    running = deployment_pb2.Deployment(id="d-old", namespace="default", job_id="web",
                                        status=deployment_pb2.DEPLOYMENT_STATUS_RUNNING)
    key = service.cache.keys.key(codec.DEPLOYMENTS, "default", "d-old")
    await service.cache.store.txn([], [Put(key, codec.encode(running)),
                                       marker_put(service.cache.keys)])
    await service.cache.sync()
    job = job_pb2.Job(id="web", datacenters=["dc1"], task_groups=[job_pb2.TaskGroup(
        name="g", count=1, update=job_pb2.UpdateStrategy(max_parallel=1))])
    job = validate_job(job)
    c = ctx(service)
    plans: list[WritePlan] = []

    def planner(v: View) -> WritePlan:
        plans.append(jobs.plan_register(v, c, job))
        return plans[-1]

    resp = await transact(service.cache, service.writer, planner)
    base = service.cache.keys.base.encode()
    watch = await service.cache.store.watch(base, base + b"\xff", resp.index)
    try:
        batch = await anext(aiter(watch))
    finally:
        await watch.close()
    changes = []
    for event in batch.events:
        parsed = service.cache.keys.parse(event.kv.key)
        if parsed is not None and event.kv.mod_revision == resp.index:
            changes.append((parsed.kind, parsed.namespace, parsed.id,
                            "delete" if event.deleted else "put"))
    assert [(e.kind, e.namespace, e.id, e.op) for e in plans[-1].events] == changes
    assert (codec.DEPLOYMENTS, "default", "d-old", "put") in changes  # cancelled
