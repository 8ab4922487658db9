"""Failure classification: a failed call's status -> what kind of failure it was."""

from __future__ import annotations

import pytest

from drover.proxy.core.failure import classify
from drover.proxy.core.retry import FailureKind
from drover.remote_errors import RemoteStatus

REFUSED = (
    "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:1: "
    "Failed to connect to remote host: Connection refused"
)


def _status(code: str, details: str, trailing: tuple) -> RemoteStatus:
    leader = next((str(v) for k, v in trailing if k == "drover-leader"), None)
    return RemoteStatus(code, details, leader=leader, answered=bool(trailing))


@pytest.mark.parametrize(
    ("code", "details", "trailing", "kind"),
    [
        ("UNAVAILABLE", REFUSED, (), FailureKind.NOT_SENT),
        ("UNAVAILABLE", "Cancelling all calls", (), FailureKind.CONNECTION_LOST),
        ("UNAVAILABLE", "Socket closed", (), FailureKind.CONNECTION_LOST),
        ("UNAVAILABLE", "not the leader", (("drover-leader", "b:1"),),
         FailureKind.REFUSED_UNAVAILABLE),
        # A server's answer wins over words in its message.
        ("UNAVAILABLE", "connection refused by peer", (("grpc-status-details-bin", b"x"),),
         FailureKind.REFUSED_UNAVAILABLE),
        ("FAILED_PRECONDITION", "fence lost", (), FailureKind.REFUSED_PRECONDITION),
        ("DEADLINE_EXCEEDED", "Deadline Exceeded", (), FailureKind.DEADLINE_EXCEEDED),
        ("CANCELLED", "", (), FailureKind.CANCELLED),
        ("NOT_FOUND", "no job", (), FailureKind.ANSWERED),
    ],
)
def test_classify(code: str, details: str, trailing: tuple, kind: FailureKind) -> None:
    failure = classify(_status(code, details, trailing), server="s:1")
    assert failure.kind is kind
    assert failure.server == "s:1"


def test_classify_reads_the_leader_hint_and_relayed_flag() -> None:
    failure = classify(_status("FAILED_PRECONDITION", "", (("drover-leader", "b:2"),)),
                       server="b:1", relayed=True)
    assert failure.leader_hint == "b:2" and failure.relayed
