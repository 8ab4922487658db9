"""SubmitPlan's planner (:mod:`drover.state.allocations.core.placement`) on views built from
plain data: stale when the job moved; the usage record compared; re-judged
on a conflict (the shell re-syncs)."""

from __future__ import annotations

import pytest
from state_core_data import NOW, context, key, ready_node, service_job, stored, view

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, node_pb2
from drover.coord.kv import Compare
from drover.state.allocations.core.placement import nothing_committed, plan_submit
from drover.state.core import codec
from drover.state.errors import PlanStale, Replan


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
                             Compare(key(codec.NODE_USAGE, codec.GLOBAL_NS, "n1"), "mod", 0),
                             Compare(key(codec.NODES, codec.GLOBAL_NS, "n1"), "mod", 3),
                             Compare(key(codec.ALLOCATIONS, "default", "p1"), "mod", 0))
    # A lost race on the usage record is judged again on a synced view.
    assert plan.retry
    assert a.create_time == NOW


def _alloc(aid: str, node: str, cpu: int, *, run: bool = True,
           job: str = "web") -> allocation_pb2.Allocation:
    a = allocation_pb2.Allocation(
        id=aid, namespace="default", job_id=job, node_id=node, task_group="g",
        desired_status=(allocation_pb2.ALLOC_DESIRED_STATUS_RUN if run
                        else allocation_pb2.ALLOC_DESIRED_STATUS_STOP))
    a.resources.cpu, a.resources.memory_mb = cpu, 100
    return a


def test_partial_commit_leaves_out_the_full_node_and_names_it() -> None:
    n2 = ready_node()
    n2.id = "n2"
    other = _alloc("x", "n1", 900, job="other")
    v = view([(codec.JOBS, stored(service_job(), 1), 1, 4), (codec.NODES, ready_node(), 2, 3),
              (codec.NODES, n2, 5, 5), (codec.ALLOCATIONS, other, 6, 6),
              (codec.NODE_USAGE, node_pb2.NodeUsage(node_id="n1"), 7, 7)])
    req = state_pb2.SubmitPlanRequest(namespace="default", job_id="web", job_index=4,
                                      eval_id="e1", node_indexes={"n1": 3, "n2": 5})
    plan = plan_submit(v, context(), req, "default",
                       [_alloc("p1", "n1", 200), _alloc("p2", "n2", 200)], [], [])
    keys = [op.key for op in plan.ops]
    assert key(codec.ALLOCATIONS, "default", "p1") not in keys
    assert key(codec.ALLOCATIONS, "default", "p2") in keys
    # Only the committed node's usage record is written, compared as absent.
    assert key(codec.NODE_USAGE, codec.GLOBAL_NS, "n2") in keys
    assert key(codec.NODE_USAGE, codec.GLOBAL_NS, "n1") not in keys
    assert Compare(key(codec.NODE_USAGE, codec.GLOBAL_NS, "n2"), "mod", 0) in plan.compares
    resp = plan.respond(42)
    assert resp.placed == 1 and resp.refresh_index == 42
    assert [(r.node_id, r.reason, list(r.placement_ids)) for r in resp.refused] == [
        ("n1", "node has no room: cpu", ["p1"])]


def test_a_stop_frees_room_for_a_placement_on_the_same_node() -> None:
    old = _alloc("a1", "n1", 900)
    v = view([(codec.JOBS, stored(service_job(), 1), 1, 4), (codec.NODES, ready_node(), 2, 3),
              (codec.ALLOCATIONS, old, 6, 6),
              (codec.NODE_USAGE, node_pb2.NodeUsage(node_id="n1"), 7, 7)])
    stop = _alloc("a1", "n1", 900, run=False)
    req = state_pb2.SubmitPlanRequest(namespace="default", job_id="web", job_index=4,
                                      eval_id="e1", alloc_indexes={"a1": 6},
                                      node_indexes={"n1": 3})
    plan = plan_submit(v, context(), req, "default", [_alloc("p1", "n1", 900)], [stop], [])
    resp = plan.respond(9)
    assert resp.placed == 1 and resp.updated == 1 and not resp.refused
    assert resp.refresh_index == 0
    assert Compare(key(codec.NODE_USAGE, codec.GLOBAL_NS, "n1"), "mod", 7) in plan.compares


def test_every_node_refused_writes_nothing() -> None:
    v = view([(codec.JOBS, stored(service_job(), 1), 1, 4),
              (codec.NODES, ready_node(drain=True), 2, 3)])
    req = state_pb2.SubmitPlanRequest(namespace="default", job_id="web", job_index=4,
                                      node_indexes={"n1": 3, "gone": 1})
    plan = plan_submit(v, context(), req, "default",
                       [_alloc("p1", "n1", 1), _alloc("p2", "gone", 1)], [], [])
    assert not plan.writes
    resp = plan.respond(v.revision)
    assert {r.node_id: r.reason for r in resp.refused} == {
        "n1": "node is not eligible", "gone": "node does not exist"}
    assert resp.refresh_index == 3  # the last change to a refused node (n1)


@pytest.mark.parametrize("case", ["job moved", "job missing", "allocations changed",
                                  "node refused"])
def test_a_refusal_on_a_view_not_synced_is_judged_again_on_a_synced_one(case: str) -> None:
    """The shell judges plans on the view as it is; a replica that lags what
    the worker read must not send it away: every refusal asks for a sync
    (Replan) first, and only a fresh view's refusal is the answer."""
    objects = [(codec.JOBS, stored(service_job(), 1), 1, 4),
               (codec.NODES, ready_node(drain=case == "node refused"), 2, 3)]
    if case == "job missing":
        objects = objects[1:]
    req = state_pb2.SubmitPlanRequest(namespace="default", job_id="web",
                                      job_index=3 if case == "job moved" else 4,
                                      node_indexes={"n1": 3})
    if case == "allocations changed":
        req.alloc_indexes["someone-elses"] = 9
    placements = [_alloc("p1", "n1", 1)]
    with pytest.raises(Replan) as asked:
        plan_submit(view(objects, fresh=False), context(), req, "default", placements, [], [])
    if case == "node refused":  # a fresh view's refusal is a partial answer
        plan = plan_submit(view(objects), context(), req, "default", placements, [], [])
        assert [r.node_id for r in plan.respond(5).refused] == ["n1"]
        return
    with pytest.raises(type(asked.value.cause)):
        plan_submit(view(objects), context(), req, "default", placements, [], [])


def test_a_stop_only_node_rewrites_its_record_without_comparing_it() -> None:
    old = _alloc("a1", "n1", 100)
    v = view([(codec.JOBS, stored(service_job(), 1), 1, 4), (codec.NODES, ready_node(), 2, 3),
              (codec.ALLOCATIONS, old, 6, 6),
              (codec.NODE_USAGE, node_pb2.NodeUsage(node_id="n1"), 7, 7)])
    req = state_pb2.SubmitPlanRequest(namespace="default", job_id="web", job_index=4,
                                      alloc_indexes={"a1": 6})
    plan = plan_submit(v, context(), req, "default", [], [_alloc("a1", "n1", 100, run=False)],
                       [])
    usage_key = key(codec.NODE_USAGE, codec.GLOBAL_NS, "n1")
    assert usage_key in [op.key for op in plan.ops]
    assert all(c.key != usage_key for c in plan.compares)


def test_the_broker_term_is_compared_when_given() -> None:
    v = view([(codec.JOBS, stored(service_job(), 1), 1, 4), (codec.NODES, ready_node(), 2, 3)])
    req = state_pb2.SubmitPlanRequest(namespace="default", job_id="web", job_index=4,
                                      node_indexes={"n1": 3})
    plan = plan_submit(v, context(), req, "default", [_alloc("p1", "n1", 1)], [], [],
                       delivery=(b"/t/drover/v1/election/broker/x", 17))
    assert plan.compares[0] == Compare(b"/t/drover/v1/election/broker/x", "create", 17)


def test_nothing_committed_names_every_node() -> None:
    resp = nothing_committed([_alloc("p1", "n1", 1), _alloc("p2", "n2", 1)],
                             [_alloc("a1", "n1", 1, run=False)], 12)
    assert resp.refresh_index == 12 and resp.placed == 0
    assert [(r.node_id, r.reason, list(r.placement_ids), list(r.update_ids))
            for r in resp.refused] == [("n1", "node changed", ["p1"], ["a1"]),
                                       ("n2", "node changed", ["p2"], [])]


def test_the_jobs_allocation_set_is_named_by_its_count_and_newest_create_index() -> None:
    """``job_allocs``: a plan read on 2 allocations (newest created at 7)
    names only the one it updates in ``alloc_indexes``; an allocation
    created or deleted since makes it stale, a client report does not."""
    a1, a2 = _alloc("a1", "n1", 100), _alloc("a2", "n1", 100)
    rows = [(codec.JOBS, stored(service_job(), 1), 1, 4), (codec.NODES, ready_node(), 2, 3),
            (codec.ALLOCATIONS, a1, 6, 6), (codec.ALLOCATIONS, a2, 7, 9)]
    stop = _alloc("a1", "n1", 100, run=False)

    def submit(count: int, newest: int, extra: list[tuple] = []) -> None:  # noqa: B006
        req = state_pb2.SubmitPlanRequest(
            namespace="default", job_id="web", job_index=4, alloc_indexes={"a1": 6},
            job_allocs=state_pb2.JobAllocSet(count=count, max_create_index=newest))
        plan_submit(view(rows + extra), context(), req, "default", [], [stop], [])

    submit(2, 7)  # a2's report since (mod 9) is no reason
    for count, newest, extra in [(1, 7, []), (2, 6, []),
                                 (2, 7, [(codec.ALLOCATIONS, _alloc("a3", "n1", 1), 10, 10)])]:
        with pytest.raises(PlanStale) as err:
            submit(count, newest, extra)
        assert err.value.metadata["what"] == "allocations"
