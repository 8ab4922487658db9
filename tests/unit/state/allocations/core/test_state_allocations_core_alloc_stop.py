"""drover.state.allocations.core.alloc_stop: an operator's stop of one allocation."""

from __future__ import annotations

import pytest
from state_core_data import context, key, service_job, stored, view

from drover.api.types.v1 import allocation_pb2, job_pb2
from drover.coord.kv import Compare
from drover.errors import NotFound
from drover.state.allocations.core import alloc_stop
from drover.state.core import codec
from drover.state.errors import AllocTerminal

C = allocation_pb2


def _alloc(**kw: object) -> allocation_pb2.Allocation:
    kw.setdefault("desired_status", C.ALLOC_DESIRED_STATUS_RUN)
    kw.setdefault("client_status", C.ALLOC_CLIENT_STATUS_RUNNING)
    return allocation_pb2.Allocation(id="a1", namespace="default", job_id="web",
                                     task_group="g", **kw)  # type: ignore[arg-type]


def test_stop_marks_a_service_allocation_to_migrate_with_an_alloc_stop_evaluation() -> None:
    """Nomad's ``Alloc.Stop``: a migration (``DesiredTransition.Migrate``) and
    an evaluation; the scheduler stops and replaces it, linked both ways.
    Was: desired stop written here, the replacement unlinked."""
    v = view([(codec.JOBS, stored(service_job(), 0), 5, 5), (codec.ALLOCATIONS, _alloc(), 6, 7)])
    plan = alloc_stop.plan_stop_alloc(v, context(), "default", "a1")
    assert Compare(key(codec.ALLOCATIONS, "default", "a1"), "mod", 7) in plan.compares
    assert Compare(key(codec.JOBS, "default", "web"), "mod", 5) in plan.compares
    a = codec.decode(codec.ALLOCATIONS, plan.ops[0].value, 6, 9)  # type: ignore[union-attr]
    assert a.desired_status == C.ALLOC_DESIRED_STATUS_RUN and a.desired_transition.migrate
    ev = codec.decode(codec.EVALUATIONS, plan.ops[1].value, 9, 9)  # type: ignore[union-attr]
    assert (ev.triggered_by, ev.job_id) == ("alloc-stop", "web")
    assert plan.respond(9).eval_id == ev.id


@pytest.mark.parametrize("kind", [job_pb2.JOB_TYPE_BATCH, job_pb2.JOB_TYPE_SYSTEM])
def test_stop_of_a_batch_or_system_allocation_is_a_migration_too(kind: int) -> None:
    """Nomad's ``Alloc.Stop`` marks every job type's allocation the same way
    (``Migrate``, never ``MigrateDisablePlacement``: the drainer's mark of a
    batch one): the scheduler replaces it linked. Was: a desired stop written
    here, the replacement unlinked."""
    job = stored(service_job(), 0)
    job.type = kind  # type: ignore[assignment]
    v = view([(codec.JOBS, job, 5, 5), (codec.ALLOCATIONS, _alloc(), 6, 7)])
    plan = alloc_stop.plan_stop_alloc(v, context(), "default", "a1")
    a = codec.decode(codec.ALLOCATIONS, plan.ops[0].value, 6, 9)  # type: ignore[union-attr]
    assert a.desired_status == C.ALLOC_DESIRED_STATUS_RUN and a.desired_transition.migrate
    assert not a.desired_transition.migrate_disable_placement


@pytest.mark.parametrize("alloc", [
    _alloc(desired_status=C.ALLOC_DESIRED_STATUS_STOP),
    _alloc(client_status=C.ALLOC_CLIENT_STATUS_COMPLETE),
])
def test_a_terminal_allocation_is_refused(alloc: allocation_pb2.Allocation) -> None:
    v = view([(codec.JOBS, stored(service_job(), 0), 5, 5), (codec.ALLOCATIONS, alloc, 6, 7)])
    with pytest.raises(AllocTerminal) as info:
        alloc_stop.plan_stop_alloc(v, context(), "default", "a1")
    assert info.value.reason == "ALLOC_TERMINAL"


def test_an_unknown_allocation_is_not_found() -> None:
    with pytest.raises(NotFound):
        alloc_stop.plan_stop_alloc(view([]), context(), "default", "a1")
