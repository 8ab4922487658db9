"""Planners on views built from plain data: the exact compares, ops,
events and answers of each write, and the refusals named by cause."""

from __future__ import annotations

import pytest
from core_data import KEYS, NOW, context, key, view

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import (
    allocation_pb2,
    deployment_pb2,
    evaluation_pb2,
    job_pb2,
    node_pb2,
    scheduler_pb2,
)
from drover.coord.kv import Compare, Delete, Put
from drover.errors import NotFound
from drover.state.core import allocs, codec, deployment, evals, jobs, nodes
from drover.state.core.placement import plan_submit
from drover.state.core.plan import Event
from drover.state.core.rules import BrokerNotPaused, JobModifyIndexMismatch, PlanStale
from drover.state.core.validate import validate_job
from drover.state.core.view import Replan

PENDING = evaluation_pb2.EVALUATION_STATUS_PENDING
BLOCKED = evaluation_pb2.EVALUATION_STATUS_BLOCKED


def service_job(count: int = 2, update: bool = True) -> job_pb2.Job:
    job = job_pb2.Job(id="web", datacenters=["dc1"])
    tg = job.task_groups.add(name="g", count=count)
    if update:
        tg.update.max_parallel = 1
    return validate_job(job)


def stored(job: job_pb2.Job, version: int) -> job_pb2.Job:
    out = job_pb2.Job()
    out.CopyFrom(job)
    out.version = version
    return out


def test_register_a_first_version_writes_job_version_deployment_and_eval() -> None:
    plan = jobs.plan_register(view([]), context(), service_job())
    assert plan.compares == (Compare(key(codec.JOBS, "default", "web"), "mod", 0),)
    assert [type(op) for op in plan.ops] == [Put, Put, Put, Put]
    assert plan.events == (
        Event(codec.JOBS, "default", "web", "put"),
        Event(codec.JOB_VERSIONS, "default", f"web/{0:020d}", "put"),
        Event(codec.DEPLOYMENTS, "default", "id-2", "put"),
        Event(codec.EVALUATIONS, "default", "id-1", "put"),
    )
    ev = codec.decode(codec.EVALUATIONS, plan.ops[3].value, 10, 10)  # type: ignore[union-attr]
    assert (ev.triggered_by, ev.deployment_id, ev.status) == ("job-register", "id-2", PENDING)
    dep = codec.decode(codec.DEPLOYMENTS, plan.ops[2].value, 10, 10)  # type: ignore[union-attr]
    assert dep.task_groups["g"].desired_canaries == 0  # a first version: no canaries
    resp = plan.respond(10)
    assert resp == state_pb2.RegisterJobResponse(job_modify_index=10, eval_id="id-1",
                                                 deployment_id="id-2", version=0, index=10)


def test_a_new_version_bumps_it_and_cancels_the_active_deployment() -> None:
    old = stored(service_job(), 3)
    running = deployment_pb2.Deployment(id="d-old", namespace="default", job_id="web",
                                        status=deployment_pb2.DEPLOYMENT_STATUS_RUNNING)
    done = deployment_pb2.Deployment(id="d-done", namespace="default", job_id="web",
                                     status=deployment_pb2.DEPLOYMENT_STATUS_SUCCESSFUL)
    v = view([(codec.JOBS, old, 5, 8), (codec.DEPLOYMENTS, running, 6, 7),
              (codec.DEPLOYMENTS, done, 4, 4)])
    plan = jobs.plan_register(v, context(), service_job(count=5))
    assert plan.compares == (Compare(key(codec.JOBS, "default", "web"), "mod", 8),
                             Compare(key(codec.DEPLOYMENTS, "default", "d-old"), "mod", 7))
    assert [e.id for e in plan.events] == ["web", f"web/{4:020d}", "id-2", "d-old", "id-1"]
    cancelled = codec.decode(codec.DEPLOYMENTS, plan.ops[3].value, 6, 9)  # type: ignore[union-attr]
    assert cancelled.status == deployment_pb2.DEPLOYMENT_STATUS_CANCELLED
    assert plan.respond(9).version == 4


def test_an_unchanged_spec_writes_only_an_evaluation() -> None:
    old = stored(service_job(), 2)
    old.job_modify_index = 8
    plan = jobs.plan_register(view([(codec.JOBS, old, 5, 8)]), context(), service_job())
    assert plan.compares == (Compare(key(codec.JOBS, "default", "web"), "mod", 8),)
    assert plan.events == (Event(codec.EVALUATIONS, "default", "id-1", "put"),)
    resp = plan.respond(12)
    assert (resp.version, resp.job_modify_index, resp.deployment_id) == (2, 8, "")
    assert resp.warnings


def test_enforce_index_refuses_on_fresh_view_and_replans_on_stale() -> None:
    old = stored(service_job(), 1)
    data = [(codec.JOBS, old, 5, 8)]
    with pytest.raises(JobModifyIndexMismatch):
        jobs.plan_register(view(data), context(), service_job(), enforce_index=True,
                           job_modify_index=7)
    with pytest.raises(Replan):
        jobs.plan_register(view(data, fresh=False), context(), service_job(),
                           enforce_index=True, job_modify_index=7)
    plan = jobs.plan_register(view(data), context(), service_job(count=3), enforce_index=True,
                              job_modify_index=8)
    assert plan.writes


def test_deregister_stops_the_job_as_a_new_version() -> None:
    with pytest.raises(NotFound):
        jobs.plan_deregister(view([]), context(), "default", "web")
    plan = jobs.plan_deregister(view([(codec.JOBS, stored(service_job(), 1), 5, 8)]),
                                context(), "default", "web")
    assert plan.compares == (Compare(key(codec.JOBS, "default", "web"), "mod", 8),)
    assert [e.kind for e in plan.events] == [codec.EVALUATIONS, codec.JOBS, codec.JOB_VERSIONS]
    job = codec.decode(codec.JOBS, plan.ops[1].value, 5, 9)  # type: ignore[union-attr]
    assert job.stop and job.version == 2 and job.job_modify_index == 9


def test_update_evaluations_compares_on_the_callers_indexes() -> None:
    ev = evaluation_pb2.Evaluation(id="e1", namespace="default", type="service",
                                   status=PENDING)
    upd = evaluation_pb2.Evaluation()
    upd.CopyFrom(ev)
    upd.status, upd.modify_index = evaluation_pb2.EVALUATION_STATUS_COMPLETE, 6
    follow = evaluation_pb2.Evaluation(id="e2", namespace="default", type="service")
    plan = evals.plan_update(view([(codec.EVALUATIONS, ev, 4, 6)]), context(), [upd], [follow])
    assert plan.compares == (Compare(key(codec.EVALUATIONS, "default", "e1"), "mod", 6),
                             Compare(key(codec.EVALUATIONS, "default", "e2"), "mod", 0))
    assert plan.retry


def test_upsert_evaluations_compares_each_on_the_view_and_keeps_create_times() -> None:
    """One look-up per evaluation: an existing one is compared on its mod
    revision and keeps its stored create_time; a new one is compared absent
    and gets the call's time unless it brought its own. An unfenced call
    that would change an existing one is refused (the callback), a call of
    new ones alone is not."""
    old = evaluation_pb2.Evaluation(id="e1", namespace="default", type="service",
                                    status=PENDING)
    old.create_time.seconds = 5
    v = view([(codec.EVALUATIONS, old, 4, 6)])
    again = evaluation_pb2.Evaluation(id="e1", namespace="default", type="service",
                                      status=evaluation_pb2.EVALUATION_STATUS_COMPLETE)
    again.create_time.seconds = 99  # not the stored one: ignored
    new = evaluation_pb2.Evaluation(id="e2", namespace="default", type="service")
    own = evaluation_pb2.Evaluation(id="e3", namespace="other", type="service")
    own.create_time.seconds = 7
    plan = evals.plan_upsert(v, context(), [again, new, own], None)
    assert plan.compares == (Compare(key(codec.EVALUATIONS, "default", "e1"), "mod", 6),
                             Compare(key(codec.EVALUATIONS, "default", "e2"), "mod", 0),
                             Compare(key(codec.EVALUATIONS, "other", "e3"), "mod", 0))
    assert plan.events == (Event(codec.EVALUATIONS, "default", "e1", "put"),
                           Event(codec.EVALUATIONS, "default", "e2", "put"),
                           Event(codec.EVALUATIONS, "other", "e3", "put"))
    written = [codec.decode(codec.EVALUATIONS, op.value, 1, 1)  # type: ignore[union-attr]
               for op in plan.ops]
    assert [w.create_time.seconds for w in written] == [5, NOW.seconds, 7]
    assert all(w.modify_time == NOW for w in written)
    assert plan.respond(9) == state_pb2.UpsertEvaluationsResponse(
        eval_ids=["e1", "e2", "e3"], index=9)

    asked: list[bool] = []

    def needs_fence() -> None:
        asked.append(True)
        raise PermissionError("an existing evaluation needs the leader's fence")

    with pytest.raises(PermissionError):
        evals.plan_upsert(v, context(), [new, again], needs_fence)
    evals.plan_upsert(v, context(), [new, own], needs_fence)
    assert asked == [True]


def test_delete_by_ids_needs_the_broker_paused_and_compares_it() -> None:
    ev = evaluation_pb2.Evaluation(id="e1", namespace="default", type="service")
    with pytest.raises(BrokerNotPaused):
        evals.plan_delete_ids(view([(codec.EVALUATIONS, ev, 4, 6)]), context(), "default",
                              ["e1"], dry_run=False)
    paused = scheduler_pb2.SchedulerConfig(pause_eval_broker=True)
    v = view([(codec.EVALUATIONS, ev, 4, 6), (codec.SCHEDULER_CONFIG, paused, 2, 3)])
    plan = evals.plan_delete_ids(v, context(), "default", ["e1"], dry_run=False)
    cfg = KEYS.key(codec.SCHEDULER_CONFIG, codec.GLOBAL_NS, codec.SCHEDULER_CONFIG_ID)
    assert plan.compares == (Compare(cfg, "mod", 3),
                             Compare(key(codec.EVALUATIONS, "default", "e1"), "mod", 6))
    assert plan.ops == (Delete(key(codec.EVALUATIONS, "default", "e1")),)
    with pytest.raises(NotFound) as err:
        evals.plan_delete_ids(v, context(), "default", ["e1", "zz"], dry_run=False)
    assert err.value.metadata == {"ids": "zz"}
    dry = evals.plan_delete_ids(view([(codec.EVALUATIONS, ev, 4, 6)]), context(), "default",
                                ["e1"], dry_run=True)
    assert not dry.writes and dry.respond(6).deleted == 1


def test_scheduler_config_cas_writes_nothing_when_it_does_not_hold() -> None:
    cfg = scheduler_pb2.SchedulerConfig(pause_eval_broker=True)
    v = view([(codec.SCHEDULER_CONFIG, scheduler_pb2.SchedulerConfig(), 2, 3)])
    assert not allocs.plan_scheduler_config(v, context(), cfg, 2).writes
    assert allocs.plan_scheduler_config(v, context(), cfg, 2).respond(3).updated is False
    plan = allocs.plan_scheduler_config(v, context(), cfg, 3)
    assert plan.compares[0].value == 3 and plan.respond(4).updated


def test_update_allocations_never_create() -> None:
    update = state_pb2.AllocationUpdate(
        id="a1", client_status=allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING)
    with pytest.raises(NotFound, match="allocation 'a1' not found"):
        allocs.plan_update_allocs(view([]), context(), [update])
    a = allocation_pb2.Allocation(id="a1", namespace="default", job_id="j")
    plan = allocs.plan_update_allocs(view([(codec.ALLOCATIONS, a, 3, 4)]), context(), [update])
    assert plan.compares == (Compare(key(codec.ALLOCATIONS, "default", "a1"), "mod", 4),)


def ready_node(**kw: object) -> node_pb2.Node:
    n = node_pb2.Node(id="n1", status=node_pb2.NODE_STATUS_READY, **kw)  # type: ignore[arg-type]
    n.resources.cpu, n.resources.memory_mb = 1000, 1000
    return n


def test_a_node_going_down_marks_its_live_allocations_lost_and_evaluates_their_job() -> None:
    job = stored(service_job(), 1)
    live = allocation_pb2.Allocation(id="a1", namespace="default", job_id="web", node_id="n1",
                                     desired_status=allocation_pb2.ALLOC_DESIRED_STATUS_RUN)
    v = view([(codec.NODES, ready_node(), 2, 3), (codec.ALLOCATIONS, live, 4, 5),
              (codec.JOBS, job, 1, 1)])
    req = state_pb2.UpdateNodeStatusRequest(id="n1", status=node_pb2.NODE_STATUS_DOWN)
    plan = nodes.plan_node_status(v, context(), req)
    assert plan.compares == (Compare(key(codec.NODES, codec.GLOBAL_NS, "n1"), "mod", 3),
                             Compare(key(codec.ALLOCATIONS, "default", "a1"), "mod", 5))
    assert [e.kind for e in plan.events] == [codec.NODES, codec.ALLOCATIONS, codec.EVALUATIONS]
    resp = plan.respond(9)
    assert (resp.lost, list(resp.eval_ids)) == (1, ["id-1"])
    same = state_pb2.UpdateNodeStatusRequest(id="n1", status=node_pb2.NODE_STATUS_READY)
    assert not nodes.plan_node_status(v, context(), same).writes


def test_a_node_registering_ready_unblocks_blocked_evaluations() -> None:
    blocked = evaluation_pb2.Evaluation(id="b1", namespace="default", type="service",
                                        status=BLOCKED)
    plan = nodes.plan_upsert_node(view([(codec.EVALUATIONS, blocked, 2, 2)]), context(),
                                  ready_node())
    assert plan.compares == (Compare(key(codec.NODES, codec.GLOBAL_NS, "n1"), "mod", 0),
                             Compare(key(codec.EVALUATIONS, "default", "b1"), "mod", 2))
    ev = codec.decode(codec.EVALUATIONS, plan.ops[1].value, 2, 3)  # type: ignore[union-attr]
    assert ev.status == PENDING


def test_submit_plan_is_stale_when_the_job_moved_and_final_on_conflict() -> None:
    job = stored(service_job(), 1)
    v = view([(codec.JOBS, job, 1, 4), (codec.NODES, ready_node(), 2, 3)])
    a = allocation_pb2.Allocation(id="p1", namespace="default", job_id="web", node_id="n1",
                                  desired_status=allocation_pb2.ALLOC_DESIRED_STATUS_RUN)
    a.resources.cpu, a.resources.memory_mb = 100, 100
    req = state_pb2.SubmitPlanRequest(namespace="default", job_id="web", job_index=3,
                                      node_indexes={"n1": 3})
    with pytest.raises(PlanStale) as err:
        plan_submit(v, context(), req, "default", [a], [], [])
    assert err.value.metadata["what"] == "job"
    req.job_index = 4
    plan = plan_submit(v, context(), req, "default", [a], [], [])
    assert plan.compares == (Compare(key(codec.JOBS, "default", "web"), "mod", 4),
                             Compare(key(codec.NODES, codec.GLOBAL_NS, "n1"), "mod", 3),
                             Compare(key(codec.ALLOCATIONS, "default", "p1"), "mod", 0))
    assert not plan.retry and isinstance(plan.conflict_error(), PlanStale)
    assert a.create_time == NOW


def test_deployment_update_reverts_marks_stable_and_clears_promoted_canaries() -> None:
    job = stored(service_job(), 2)
    job.job_modify_index = 8
    v1 = stored(service_job(), 1)
    before = deployment_pb2.Deployment(id="d1", namespace="default", job_id="web",
                                       status=deployment_pb2.DEPLOYMENT_STATUS_RUNNING)
    before.task_groups["g"].promoted = False
    canary = allocation_pb2.Allocation(id="c1", namespace="default", job_id="web",
                                       deployment_id="d1", task_group="g")
    canary.deployment_status.canary = True
    v = view([(codec.JOBS, job, 5, 8), (codec.JOB_VERSIONS, v1, 6, 6),
              (codec.DEPLOYMENTS, before, 7, 9), (codec.ALLOCATIONS, canary, 10, 11)])
    after = deployment_pb2.Deployment()
    after.CopyFrom(before)
    after.status, after.modify_index = deployment_pb2.DEPLOYMENT_STATUS_FAILED, 9
    after.task_groups["g"].promoted = True
    req = state_pb2.UpdateDeploymentRequest(deployment=after, stable_job_version=1,
                                            revert_job=v1, revert_expected_job_modify_index=8)
    plan = deployment.plan_deployment_update(v, context(), req, after, [])
    assert plan.compares == (
        Compare(key(codec.DEPLOYMENTS, "default", "d1"), "mod", 9),
        Compare(KEYS.version_key("default", "web", 1), "mod", 6),
        Compare(key(codec.JOBS, "default", "web"), "mod", 8),
        Compare(KEYS.version_key("default", "web", 3), "mod", 0),
        Compare(key(codec.DEPLOYMENTS, "default", "id-1"), "mod", 0),
        Compare(key(codec.ALLOCATIONS, "default", "c1"), "mod", 11),
    )
    reverted = codec.decode(codec.JOBS, plan.ops[2].value, 5, 12)  # type: ignore[union-attr]
    assert reverted.version == 3  # next_version: current 2 + 1
    cleared = codec.decode(codec.ALLOCATIONS, plan.ops[-1].value, 10, 12)  # type: ignore[union-attr]
    assert not cleared.deployment_status.canary
    assert plan.respond(12).reverted_job_version == 1
    # The user changed the job meanwhile: the revert is skipped, not the write.
    req.revert_expected_job_modify_index = 7
    skipped = deployment.plan_deployment_update(v, context(), req, after, [])
    assert not skipped.respond(12).HasField("reverted_job_version")
    assert codec.JOBS not in {e.kind for e in skipped.events}
