"""check_name (one compiled match) and owned_evals (the request's own evaluations)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import evaluation_pb2
from drover.errors import InvalidArgument
from drover.state.core.validate import (
    check_name,
    eval_is_complete,
    owned_evals,
    validate_eval,
    validated_eval_updates,
    validated_evals,
)


@pytest.mark.parametrize("value", ["a", "default", "A-b_c.9", "x" * 128, "-", ".", "_"])
def test_valid_names_pass_as_they_are(value: str) -> None:
    assert check_name(value, "id") == value


@pytest.mark.parametrize("value", ["x" * 129, "a/b", "a b", "é", "abc\n", "\nabc", "a*", "*"])
def test_invalid_names_are_refused_naming_the_field(value: str) -> None:
    with pytest.raises(InvalidArgument, match="is invalid") as err:
        check_name(value, "job.id")
    assert err.value.metadata == {"field": "job.id"}


def test_empty_is_required_and_star_only_where_allowed() -> None:
    with pytest.raises(InvalidArgument, match="namespace is required"):
        check_name("", "namespace")
    assert check_name("*", "namespace", allow_all=True) == "*"
    with pytest.raises(InvalidArgument):
        check_name("", "namespace", allow_all=True)


def _ev(eid: str, **kw: object) -> evaluation_pb2.Evaluation:
    return evaluation_pb2.Evaluation(id=eid, type="service", **kw)  # type: ignore[arg-type]


def test_owned_evals_fill_in_the_request_itself_and_copies_do_not() -> None:
    req = state_pb2.UpsertEvaluationsRequest(evaluations=[_ev("a"), _ev("b", priority=70)])
    copies = validated_evals(req.evaluations)
    assert req.evaluations[0].namespace == "" and copies[0].namespace == "default"
    owned = owned_evals(req.evaluations)
    assert [e.id for e in owned] == ["a", "b"]
    assert req.evaluations[0].namespace == "default" and req.evaluations[0].priority == 50
    assert req.evaluations[1].priority == 70
    owned[0].status = evaluation_pb2.EVALUATION_STATUS_COMPLETE
    assert req.evaluations[0].status == evaluation_pb2.EVALUATION_STATUS_COMPLETE


def test_owned_evals_refuse_naming_the_field_and_index() -> None:
    req = state_pb2.UpdateEvaluationsRequest(
        updates=[_ev("a", modify_index=3)], creates=[_ev("ok"), _ev("bad id")])
    with pytest.raises(InvalidArgument) as err:
        validated_eval_updates(req)
    assert err.value.metadata == {"field": "creates[1].id"}
    req = state_pb2.UpdateEvaluationsRequest(updates=[_ev("a", modify_index=3)],
                                             creates=[_ev("a")])
    with pytest.raises(InvalidArgument, match="appears twice"):
        validated_eval_updates(req)


def test_object_keys_parse_to_their_parts_and_others_to_none() -> None:
    from drover.coord.keys import Keyspace
    from drover.state.core import codec

    keys = codec.KeyCodec(Keyspace("/t/drover"))
    ok = keys.parse(keys.key(codec.EVALUATIONS, "default", "a/b"))
    assert ok == codec.ObjectKey("evaluations", "default", "a/b")
    assert isinstance(ok, codec.ObjectKey) and ok.id == "a/b"
    assert keys.parse(keys.key("nope", "default", "x")) is None
    assert keys.parse(f"{keys.base}evaluations/only-ns".encode()) is None
    assert keys.parse(b"/elsewhere/evaluations/default/x") is None


NAMES = ["", "a", "x" * 128, "x" * 129, "a/b", "a b", "*", "\u00e9", "ok-1_.Z", "a\n"]


def test_an_evaluation_is_complete_only_when_validate_eval_would_change_nothing() -> None:
    """The fast check never passes what validate_eval refuses or fills in
    (every combination of good and bad ids, namespaces, job ids, priorities
    and types); it does pass a complete evaluation."""
    complete = 0
    for eid, ns, job, prio, typ in itertools.product(
            NAMES, NAMES, NAMES, [0, 1, 50, 100, 101, -1], ["", "service"]):
        ev = evaluation_pb2.Evaluation(id=eid, namespace=ns, job_id=job, priority=prio, type=typ)
        if not eval_is_complete(ev):
            continue
        complete += 1
        checked = evaluation_pb2.Evaluation()
        checked.CopyFrom(ev)
        # validate_eval itself: validated_evals would skip it for a complete one.
        validate_eval("ev", checked)  # raises if refused
        assert checked == ev  # nothing filled in
    assert complete == 3 * 3 * 4 * 3  # ids, namespaces, job ids (or none), priorities


def test_validated_eval_updates_name_the_first_missing_index_and_duplicate() -> None:
    req = state_pb2.UpdateEvaluationsRequest(
        updates=[_ev("a", modify_index=3), _ev("b"), _ev("c")])
    with pytest.raises(InvalidArgument) as err:
        validated_eval_updates(req)
    assert err.value.metadata == {"field": "updates[1].modify_index"}
    req = state_pb2.UpdateEvaluationsRequest(
        updates=[_ev("a", modify_index=3)], creates=[_ev("b"), _ev("a"), _ev("b")])
    with pytest.raises(InvalidArgument, match="'a' appears twice") as err:
        validated_eval_updates(req)
    assert err.value.metadata == {"field": "creates[1].id"}
    ok = state_pb2.UpdateEvaluationsRequest(updates=[_ev("a", modify_index=3)],
                                            creates=[_ev("a", namespace="other")])
    assert [len(x) for x in validated_eval_updates(ok)] == [1, 1]


def _job_with(block: Any) -> Any:
    from drover.api.types.v1 import job_pb2
    j = job_pb2.Job(id="j", datacenters=["dc1"], type=job_pb2.JOB_TYPE_BATCH,
                    task_groups=[job_pb2.TaskGroup(name="g", count=1)])
    if block is not None:
        j.task_groups[0].reschedule.CopyFrom(block)
    return j


def test_reschedule_block_is_checked_by_nomads_rules() -> None:
    from google.protobuf.duration_pb2 import Duration

    from drover.api.types.v1 import job_pb2
    from drover.state.core.validate import validate_job
    validate_job(_job_with(None))
    validate_job(_job_with(job_pb2.ReschedulePolicy(attempts=3)))
    with pytest.raises(InvalidArgument) as e:
        validate_job(_job_with(job_pb2.ReschedulePolicy(
            delay=Duration(seconds=1))))
    assert "delay cannot be less than 5s" in str(e.value)
    assert e.value.metadata["field"] == "job.task_groups[0].reschedule"
