"""Every error kind maps to one gRPC code, with ErrorInfo."""

from __future__ import annotations

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from drover import errors
from drover.remote_errors import LEADER_METADATA
from drover.rpc.errors import status_code, to_status


@pytest.mark.parametrize("kind", list(errors.Kind))
def test_every_kind_has_the_code_of_its_name(kind: errors.Kind) -> None:
    assert status_code(kind) == getattr(grpc.StatusCode, kind.value)


def test_status_carries_error_info() -> None:
    class InvalidPageToken(errors.InvalidArgument):
        reason = "INVALID_PAGE_TOKEN"

    status, extra = to_status(InvalidPageToken("token was made for another filter",
                                               metadata={"field": "page_token"}))
    assert status.code == grpc.StatusCode.INVALID_ARGUMENT
    assert status.details == "token was made for another filter"
    assert extra == ()
    detail = rpc_status.status_pb2.Status.FromString(dict(status.trailing_metadata)[
        "grpc-status-details-bin"])
    info = error_details_pb2.ErrorInfo()
    assert detail.details[0].Unpack(info)
    assert (info.reason, info.domain, dict(info.metadata)) == (
        "INVALID_PAGE_TOKEN", "drover", {"field": "page_token"})


def test_not_leader_adds_leader_hint() -> None:
    status, extra = to_status(errors.NotLeader("broker", "10.0.0.7:7102"))
    assert status.code == grpc.StatusCode.UNAVAILABLE
    assert extra == ((LEADER_METADATA, "10.0.0.7:7102"),)
    status, extra = to_status(errors.NotLeader("broker", None))
    assert extra == ()
    assert "no leader is known" in status.details


def test_fence_lost_is_failed_precondition() -> None:
    status, _ = to_status(errors.FenceLost("lost leadership at term 7"))
    assert status.code == grpc.StatusCode.FAILED_PRECONDITION


def test_outcome_unknown_is_unavailable_with_its_own_reason() -> None:
    from drover.coord.errors import EtcdOutcomeUnknown, EtcdUnavailable

    err = EtcdOutcomeUnknown("etcd txn: member stopped answering")
    assert isinstance(err, EtcdUnavailable)  # every unavailable handler applies
    status, _ = to_status(err)
    assert status.code == grpc.StatusCode.UNAVAILABLE
    info = error_details_pb2.ErrorInfo()
    detail = rpc_status.status_pb2.Status.FromString(
        dict(status.trailing_metadata)["grpc-status-details-bin"]).details[0]
    assert detail.Unpack(info)
    assert info.reason == "OUTCOME_UNKNOWN"


def test_inner_deadline_leaves_the_client_time_to_hear_why() -> None:
    from drover.rpc.errors import _inner_deadline

    assert _inner_deadline(None) is None
    assert _inner_deadline(10.0) == pytest.approx(9.75)
    assert _inner_deadline(0.5) == pytest.approx(0.4)


def test_not_leader_hint_carries_the_term() -> None:
    from drover.remote_errors import LEADER_TERM_METADATA

    _, extra = to_status(errors.NotLeader("broker", "10.0.0.7:7102", 41))
    assert extra == ((LEADER_METADATA, "10.0.0.7:7102"), (LEADER_TERM_METADATA, "41"))
    _, extra = to_status(errors.NotLeader("broker", None, 41))
    assert extra == ()
