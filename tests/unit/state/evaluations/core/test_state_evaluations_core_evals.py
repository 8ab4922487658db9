"""The evaluation planners (:mod:`drover.state.evaluations.core.evals`) on views built from
plain data: what UpdateEvaluations, UpsertEvaluations and a delete by ids
compare, write and answer, and their refusals by cause."""

from __future__ import annotations

import pytest
from state_core_data import KEYS, NOW, context, key, view

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import (
    evaluation_pb2,
    scheduler_pb2,
)
from drover.coord.kv import Compare, Delete
from drover.errors import NotFound
from drover.state.core import codec
from drover.state.core.plan import Event
from drover.state.errors import BrokerNotPaused, Replan
from drover.state.evaluations.core import evals

PENDING = evaluation_pb2.EVALUATION_STATUS_PENDING


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


def test_upsert_evaluations_same_create_again_writes_nothing() -> None:
    """A retried create (stored exactly so, save the server-set times and
    indexes) is OK with nothing written, unfenced; among new ones it is
    compared, not put; a different evaluation under its id still asks for
    the fence; on a stale view the fresh view decides (Replan)."""
    stored = evaluation_pb2.Evaluation(id="e1", namespace="default", type="service",
                                       job_id="j", status=PENDING)
    stored.create_time.seconds, stored.modify_time.seconds = 5, 6
    v = view([(codec.EVALUATIONS, stored, 4, 6)])
    again = evaluation_pb2.Evaluation(id="e1", namespace="default", type="service",
                                      job_id="j", status=PENDING)

    def needs_fence() -> None:
        raise PermissionError("fence")

    plan = evals.plan_upsert(v, context(), [again], needs_fence)
    assert not plan.writes and plan.compares == ()
    assert plan.respond(9) == state_pb2.UpsertEvaluationsResponse(eval_ids=["e1"], index=9)
    new = evaluation_pb2.Evaluation(id="e2", namespace="default", type="service")
    plan = evals.plan_upsert(v, context(), [again, new], needs_fence)
    assert plan.compares == (Compare(key(codec.EVALUATIONS, "default", "e1"), "mod", 6),
                             Compare(key(codec.EVALUATIONS, "default", "e2"), "mod", 0))
    assert plan.events == (Event(codec.EVALUATIONS, "default", "e2", "put"),)
    for field, value in (("priority", 90), ("job_id", "other")):
        changed = evaluation_pb2.Evaluation()
        changed.CopyFrom(again)
        setattr(changed, field, value)
        with pytest.raises(PermissionError):
            evals.plan_upsert(v, context(), [changed], needs_fence)
    with pytest.raises(Replan):
        evals.plan_upsert(view([(codec.EVALUATIONS, stored, 4, 6)], fresh=False),
                          context(), [again], needs_fence)


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
