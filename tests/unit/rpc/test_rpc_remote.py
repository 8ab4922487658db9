"""The inbound half: a remote status back to the drover error it stands for,
and the outbound/inbound round trip keeps class, reason and metadata."""

from __future__ import annotations

import pytest
from google.rpc import error_details_pb2, status_pb2

from drover import errors
from drover.remote_errors import RemoteError, RemoteStatus, narrow, to_error
from drover.rpc.errors import to_status


def _round_trip(err: errors.DroverError) -> errors.DroverError:
    """What a client decodes from the status a server sends for ``err``."""
    status, extra = to_status(err)
    details = dict(status.trailing_metadata)["grpc-status-details-bin"]
    decoded = status_pb2.Status.FromString(details)
    info = error_details_pb2.ErrorInfo()
    decoded.details[0].Unpack(info)
    return to_error(RemoteStatus(status.code.name, decoded.message, info.reason,
                                 dict(info.metadata), dict(extra).get("drover-leader"),
                                 answered=True))


@pytest.mark.parametrize("err", [
    errors.FenceLost("fence lost", metadata={"term": "3"}),
    errors.Conflict("changed"),
    errors.NotFound("no job", metadata={"job": "web"}),
    errors.InvalidArgument("bad", metadata={"field": "id"}),
    errors.FailedPrecondition("not paused"),
    errors.Unavailable("later"),
    # The evaluation refusals the state service sends and the broker passes on.
    errors.EvaluationGone("deleted", metadata={"eval_id": "e1"}),
    errors.EvaluationChanged("superseded", metadata={"eval_id": "e1"}),
    errors.EvaluationExists("exists", metadata={"eval_id": "e2"}),
])
def test_round_trip_keeps_class_reason_and_metadata(err: errors.DroverError) -> None:
    back = _round_trip(err)
    assert type(back) is type(err)
    assert back.reason == err.reason and back.metadata == err.metadata
    assert back.message == err.message


def test_specific_reasons_survive_on_the_kind_class() -> None:
    class BrokerNotPaused(errors.FailedPrecondition):
        reason = "BROKER_NOT_PAUSED"

    back = _round_trip(BrokerNotPaused("pause first"))
    assert isinstance(back, errors.FailedPrecondition) and back.reason == "BROKER_NOT_PAUSED"


def test_not_leader_carries_the_hint() -> None:
    back = _round_trip(errors.NotLeader("broker", "10.0.0.1:7"))
    assert isinstance(back, errors.NotLeader) and back.leader == "10.0.0.1:7"


def test_kinds_without_a_class_and_codes_without_a_kind() -> None:
    compacted = to_error(RemoteStatus("OUT_OF_RANGE", "compacted", "INDEX_COMPACTED"))
    assert isinstance(compacted, RemoteError)
    assert compacted.kind is errors.Kind.OUT_OF_RANGE and compacted.reason == "INDEX_COMPACTED"
    for code in ("UNKNOWN", "CANCELLED", "UNIMPLEMENTED"):
        err = to_error(RemoteStatus(code, "boom"))
        assert isinstance(err, errors.Unavailable) and code in err.message


def test_narrow_keeps_what_the_caller_acts_on() -> None:
    fence = errors.FenceLost("gone")
    assert narrow(fence, (errors.FenceLost,), "state") is fence
    other = narrow(errors.InvalidArgument("bad", metadata={"field": "x"}), (errors.FenceLost,),
                   "state")
    assert isinstance(other, errors.Unavailable)
    assert other.metadata == {"field": "x", "remote_reason": "INVALID_ARGUMENT"}


def test_an_unknown_outcome_has_one_class_whatever_its_cause() -> None:
    """One home for OUTCOME_UNKNOWN: each cause's class is a
    :class:`drover.errors.OutcomeUnknown` (the reason declared once), and a
    remote status with that reason decodes to one, so a caller of any
    drover service can ``except OutcomeUnknown``."""
    from drover.broker.errors import WriteOutcomeUnknown
    from drover.coord.errors import EtcdOutcomeUnknown, EtcdUnavailable
    from drover.proxy.errors import ForwardOutcomeUnknown
    from drover.rpc.hold import HoldOutcomeUnknown

    for cause in (EtcdOutcomeUnknown, HoldOutcomeUnknown, WriteOutcomeUnknown,
                  ForwardOutcomeUnknown):
        err = cause("no answer")
        assert isinstance(err, errors.OutcomeUnknown) and err.reason == "OUTCOME_UNKNOWN"
        assert "reason" not in vars(cause), f"{cause.__name__} declares the reason again"
    assert isinstance(EtcdOutcomeUnknown("x"), EtcdUnavailable)
    decoded = to_error(RemoteStatus("UNAVAILABLE", "the server went silent", "OUTCOME_UNKNOWN",
                                    {"service": "broker"}, answered=True))
    assert isinstance(decoded, errors.OutcomeUnknown)
    assert decoded.metadata == {"service": "broker"}
