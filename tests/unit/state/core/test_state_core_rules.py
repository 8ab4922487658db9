"""The write rules, each on a view built from plain data."""

from __future__ import annotations

import pytest
from state_core_data import KEYS, context, key, view

from drover.api.types.v1 import (
    allocation_pb2,
    deployment_pb2,
    evaluation_pb2,
    job_pb2,
    scheduler_pb2,
)
from drover.coord.kv import Compare
from drover.errors import (
    EvaluationChanged,
    EvaluationExists,
    EvaluationGone,
    FenceRequired,
    InvalidArgument,
    NotFound,
)
from drover.state.core import codec
from drover.state.core.plan import PlanBuilder
from drover.state.core.rules import (
    MAX_OBJECT_OPS,
    allocation_owners,
    broker_paused,
    cas_holds,
    create_is_new,
    deployment_seen,
    leader_fence,
    update_of_seen,
    within_cap,
)
from drover.state.errors import BrokerNotPaused, DeploymentChanged

EV = evaluation_pb2.Evaluation(id="e1", namespace="default", type="service",
                               status=evaluation_pb2.EVALUATION_STATUS_PENDING)


def test_broker_paused_refuses_and_returns_the_revision_to_compare() -> None:
    with pytest.raises(BrokerNotPaused) as err:
        broker_paused(view([]))
    assert err.value.reason == "BROKER_NOT_PAUSED"
    running = scheduler_pb2.SchedulerConfig(pause_eval_broker=False)
    with pytest.raises(BrokerNotPaused):
        broker_paused(view([(codec.SCHEDULER_CONFIG, running, 3, 3)]))
    paused = scheduler_pb2.SchedulerConfig(pause_eval_broker=True)
    assert broker_paused(view([(codec.SCHEDULER_CONFIG, paused, 3, 7)])) == 7


def test_leader_fence_needs_an_election_key_of_this_keyspace() -> None:
    with pytest.raises(FenceRequired, match="needs a drover-fence"):
        leader_fence(None, KEYS.base, "UpdateDeployment")
    with pytest.raises(FenceRequired, match="election key"):
        leader_fence(f"{KEYS.base}jobs/default/j", KEYS.base, "UpdateDeployment")
    leader_fence(f"{KEYS.base}election/broker/x", KEYS.base, "UpdateDeployment")


def test_sizes_within_the_request_cap() -> None:
    within_cap(MAX_OBJECT_OPS, "evaluations")
    with pytest.raises(InvalidArgument) as err:
        within_cap(MAX_OBJECT_OPS + 1, "evaluations")
    assert err.value.metadata == {"field": "evaluations", "max_objects": "127"}
    # A replica told a larger --max-txn-ops takes that less one, and says so.
    within_cap(1023, "plan", 1023)
    with pytest.raises(InvalidArgument, match="at most 1023") as err:
        within_cap(1024, "plan", 1023)
    assert err.value.metadata == {"field": "plan", "max_objects": "1023"}


def test_cas_holds_only_on_the_revision_seen() -> None:
    assert cas_holds(None, 9) and cas_holds(9, 9)
    assert not cas_holds(8, 9)


def test_an_update_names_gone_and_changed_on_a_fresh_view_only() -> None:
    upd = evaluation_pb2.Evaluation()
    upd.CopyFrom(EV)
    upd.modify_index = 5
    with pytest.raises(EvaluationGone) as gone:
        update_of_seen(view([]), upd)
    assert gone.value.metadata == {"eval_id": "e1"}
    with pytest.raises(EvaluationChanged) as changed:
        update_of_seen(view([(codec.EVALUATIONS, EV, 4, 6)]), upd)
    assert changed.value.metadata == {"eval_id": "e1", "modify_index": "6",
                                      "status": "EVALUATION_STATUS_PENDING"}
    # On a stale view the caller's compares decide (the txn), not the view.
    update_of_seen(view([], fresh=False), upd)
    create_is_new(view([(codec.EVALUATIONS, EV, 4, 4)], fresh=False), EV)
    update_of_seen(view([(codec.EVALUATIONS, EV, 4, 5)]), upd)  # holds: no error


def test_creates_never_update() -> None:
    with pytest.raises(EvaluationExists):
        create_is_new(view([(codec.EVALUATIONS, EV, 4, 4)]), EV)
    create_is_new(view([]), EV)


def test_deployment_seen_at_the_callers_index() -> None:
    d = deployment_pb2.Deployment(id="d1", namespace="default", job_id="j")
    with pytest.raises(NotFound):
        deployment_seen(view([]), "default", "d1", 5)
    with pytest.raises(DeploymentChanged) as err:
        deployment_seen(view([(codec.DEPLOYMENTS, d, 3, 8)]), "default", "d1", 5)
    assert err.value.metadata == {"index": "8"}
    assert deployment_seen(view([(codec.DEPLOYMENTS, d, 3, 5)]), "default", "d1", 5).mod == 5


def test_allocation_owners_exist_belong_together_and_are_compared_on_create() -> None:
    job = job_pb2.Job(id="j", namespace="default")
    other = deployment_pb2.Deployment(id="d2", namespace="default", job_id="k")
    mine = deployment_pb2.Deployment(id="d1", namespace="default", job_id="j")
    data = [(codec.JOBS, job, 2, 9), (codec.DEPLOYMENTS, mine, 3, 4),
            (codec.DEPLOYMENTS, other, 5, 5)]
    a = allocation_pb2.Allocation(id="a", namespace="default", job_id="j", deployment_id="d1")
    b = allocation_pb2.Allocation(id="b", namespace="default", job_id="j")
    plan = PlanBuilder(KEYS)
    allocation_owners(view(data), [a, b], plan)
    assert plan.compares == [Compare(key(codec.JOBS, "default", "j"), "create", 2),
                             Compare(key(codec.DEPLOYMENTS, "default", "d1"), "create", 3)]
    wrong = allocation_pb2.Allocation(id="c", namespace="default", job_id="j",
                                      deployment_id="d2")
    with pytest.raises(InvalidArgument, match="belongs to job 'k'"):
        allocation_owners(view(data), [wrong], PlanBuilder(KEYS))
    orphan = allocation_pb2.Allocation(id="o", namespace="default", job_id="nope")
    with pytest.raises(NotFound) as err:
        allocation_owners(view(data), [orphan], PlanBuilder(KEYS))
    assert err.value.metadata == {"field": "allocations[0].job_id"}
    assert context().new_id() == "id-1"
