"""The planner's migrate hook (:mod:`drover.worker.migrate`), on scenarios of
Nomad's reconciler tests (TestReconciler_DrainNode*): only the allocations
the drainer marked move; each is stopped with its replacement placed in the
same plan, named as it was, off the draining node."""

from __future__ import annotations

from test_planner import STOP, deployment, ids, job, nodes, running, snap

from drover.api.types.v1 import job_pb2, node_pb2
from drover.worker.planner import compute_plan


def _draining(ns: list[node_pb2.Node], i: int = 0) -> list[node_pb2.Node]:
    ns[i].drain = True
    ns[i].scheduling_eligibility = node_pb2.NODE_SCHEDULING_ELIGIBILITY_INELIGIBLE
    return ns


def test_unmarked_allocations_on_a_draining_node_stay() -> None:
    j = job()
    plan = compute_plan(snap(j, running(j, 3), ns=_draining(nodes(3)), dep=deployment(0)))
    assert plan.empty and not plan.queued


def test_a_marked_allocation_is_stopped_and_replaced_elsewhere_with_its_name() -> None:
    j = job()
    allocs = running(j, 3)
    allocs[1].desired_transition.migrate = True
    plan = compute_plan(snap(j, allocs, ns=_draining(nodes(3)), dep=deployment(0)),
                        new_id=ids())
    assert [(a.id, a.desired_status, a.desired_description) for a in plan.updates] == [
        ("v0-1", STOP, "alloc is being migrated")]
    (new,) = plan.placements
    assert (new.name, new.previous_allocation) == ("web.g[1]", "v0-1")
    assert new.node_id != "n0"


def test_with_nowhere_to_go_a_marked_allocation_keeps_running() -> None:
    j = job()
    allocs = running(j, 3)
    allocs[0].desired_transition.migrate = True
    plan = compute_plan(snap(j, allocs, ns=_draining(nodes(1)), dep=deployment(0)))
    assert plan.empty and plan.queued == {"g": 1}


def test_a_drained_batch_allocation_is_stopped_not_replaced() -> None:
    """Nomad's drainAllocs marks a batch allocation ``MigrateDisablePlacement``
    too: stopped, its slot still counted, no replacement
    (TestReconciler_MigrateDisablePlacementBatchAllocs)."""
    j = job(count=2)
    j.type = job_pb2.JOB_TYPE_BATCH
    allocs = running(j, 2, healthy=None)
    allocs[0].desired_transition.migrate = True
    allocs[0].desired_transition.migrate_disable_placement = True
    plan = compute_plan(snap(j, allocs, ns=_draining(nodes(3))))
    assert [a.id for a in plan.updates] == ["v0-0"] and not plan.placements


def test_an_alloc_stop_of_a_batch_allocation_is_replaced_and_linked() -> None:
    """Nomad's ``Alloc.Stop`` marks ``Migrate`` only: the batch reconciler
    migrates it like a service's (TestReconciler_MigrateBatchAllocs). Was:
    stopped, the replacement unlinked."""
    j = job(count=2)
    j.type = job_pb2.JOB_TYPE_BATCH
    allocs = running(j, 2, healthy=None)
    allocs[0].desired_transition.migrate = True
    plan = compute_plan(snap(j, allocs, ns=nodes(3)), new_id=ids())
    (old,) = plan.updates
    (new,) = plan.placements
    assert (old.id, old.desired_status, old.desired_description) == (
        "v0-0", STOP, "alloc is being migrated")
    assert new.previous_allocation == old.id and old.next_allocation == new.id
    assert new.name == allocs[0].name


def test_more_marked_than_a_plan_holds_move_in_a_follow_up() -> None:
    j = job(count=100)
    allocs = running(j, 100)
    for a in allocs:
        a.desired_transition.migrate = True
    plan = compute_plan(snap(j, allocs, ns=_draining(nodes(3, cpu=100_000, mem=100_000))),
                        new_id=ids(), max_ops=126)
    assert plan.more, "the plan must ask for a follow-up evaluation"
    # 126 objects: 3 usage records (the drained node, the two it moves to)
    # and 61 stop + placement pairs.
    assert len(plan.placements) == len(plan.updates) == 61
    assert plan.objects() == 125



def test_a_migration_links_the_replacement_both_ways() -> None:
    """Nomad's state store sets the stopped allocation's NextAllocation when
    its replacement (PreviousAllocation) is written: a drain's or an
    ``alloc stop``'s migration names the replacement on the stopped one."""
    j = job(count=2)
    allocs = running(j, 2)
    allocs[1].desired_transition.migrate = True
    plan = compute_plan(snap(j, allocs, dep=deployment(0)), new_id=ids())
    (new,) = plan.placements
    (old,) = plan.updates
    assert old.id == allocs[1].id and old.desired_status == STOP
    assert old.desired_description == "alloc is being migrated"
    assert new.previous_allocation == old.id and old.next_allocation == new.id
    assert new.name == "web.g[1]"


def test_a_drained_batch_allocation_keeps_its_slot_once_stopped() -> None:
    """Nomad's reconciler filters (``ShouldDisableMigrationPlacement``): a
    drained batch allocation, server-terminal, still counts toward the
    group, so a later evaluation (the node made eligible again) places no
    replacement."""
    j = job(count=2)
    j.type = job_pb2.JOB_TYPE_BATCH
    allocs = running(j, 2, healthy=None)
    allocs[0].desired_transition.migrate = True
    allocs[0].desired_transition.migrate_disable_placement = True
    allocs[0].desired_status = STOP
    plan = compute_plan(snap(j, allocs, ns=nodes(3)))
    assert plan.empty and not plan.queued
    allocs[0].desired_transition.migrate_disable_placement = False  # an operator's stop
    assert len(compute_plan(snap(j, allocs, ns=nodes(3)), new_id=ids()).placements) == 1
