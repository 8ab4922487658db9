"""Retry safety: the failure-kind table and leader hints (reads: test_rpc_reads)."""

from __future__ import annotations

import pytest

from drover.proxy.core.failure import classify
from drover.proxy.core.retry import (
    CallFailure,
    FailureKind,
    RetryAction,
    decide_retry,
)
from drover.remote_errors import RemoteStatus

READ = "/drover.state.v1.StateService/GetJob"
WRITE = "/drover.state.v1.StateService/RegisterJob"
K = FailureKind
A = RetryAction

# (method, kind, hint, relayed) -> (action, report the server as failed)
TABLE = [
    (READ, K.NOT_SENT, None, False, A.RETRY_NEXT, True),
    (WRITE, K.NOT_SENT, None, False, A.RETRY_NEXT, True),
    (READ, K.CONNECTION_LOST, None, False, A.RETRY_NEXT, True),
    (WRITE, K.CONNECTION_LOST, None, False, A.FAIL, True),
    # The server stopped answering (hold timeout) or left membership mid-call.
    (READ, K.STALLED, None, False, A.RETRY_NEXT, True),
    (WRITE, K.STALLED, None, False, A.FAIL, True),
    (WRITE, K.STALLED, "10.0.0.2:1", False, A.FAIL, True),
    (READ, K.REFUSED_UNAVAILABLE, None, False, A.RETRY_NEXT, True),
    (WRITE, K.REFUSED_UNAVAILABLE, None, False, A.FAIL, True),
    (READ, K.REFUSED_UNAVAILABLE, "10.0.0.2:1", False, A.FOLLOW_LEADER, False),
    (WRITE, K.REFUSED_UNAVAILABLE, "10.0.0.2:1", False, A.FOLLOW_LEADER, False),
    (WRITE, K.REFUSED_PRECONDITION, "10.0.0.2:1", False, A.FOLLOW_LEADER, False),
    (WRITE, K.REFUSED_PRECONDITION, None, False, A.FAIL, False),
    (READ, K.REFUSED_PRECONDITION, None, False, A.FAIL, False),
    # A hint naming the server that refused would loop: ignored.
    (WRITE, K.REFUSED_UNAVAILABLE, "10.0.0.1:1", False, A.FAIL, True),
    (READ, K.DEADLINE_EXCEEDED, None, False, A.FAIL, False),
    (WRITE, K.DEADLINE_EXCEEDED, None, False, A.FAIL, False),
    (READ, K.CANCELLED, None, False, A.FAIL, False),
    (READ, K.ANSWERED, None, False, A.FAIL, False),
    (WRITE, K.ANSWERED, "10.0.0.2:1", False, A.FAIL, False),
    # Once stream messages reached the client, nothing is retried.
    ("/drover.state.v1.StateService/Subscribe", K.CONNECTION_LOST, None, True, A.FAIL, True),
    ("/drover.state.v1.StateService/Subscribe", K.CONNECTION_LOST, None, False, A.RETRY_NEXT, True),
    (READ, K.REFUSED_UNAVAILABLE, "10.0.0.2:1", True, A.FAIL, False),
]


@pytest.mark.parametrize(("method", "kind", "hint", "relayed", "action", "failed"), TABLE)
def test_retry_policy_table(
    method: str,
    kind: FailureKind,
    hint: str | None,
    relayed: bool,
    action: RetryAction,
    failed: bool,
) -> None:
    failure = CallFailure(kind, server="10.0.0.1:1", leader_hint=hint, relayed=relayed)
    decision = decide_retry(method, failure)
    assert decision.action is action
    assert decision.server_failed is failed
    assert decision.reason
    assert decision.leader == (hint if action is A.FOLLOW_LEADER else None)


def test_every_failure_kind_has_a_rule() -> None:
    covered = {row[1] for row in TABLE}
    assert covered == set(FailureKind)


@pytest.mark.parametrize("method", [WRITE, READ, "/drover.broker.v1.EvalBrokerService/AckBatch"])
def test_a_call_refused_for_stale_acl_data_goes_to_the_next_server(method: str) -> None:
    """ACL_DATA_STALE is the ACL interceptor's refusal, before any handler
    ran: even a write is safe to send elsewhere, and the stale server goes
    to the back of the list."""
    failure = CallFailure(K.REFUSED_UNAVAILABLE, server="10.0.0.1:1", reason="ACL_DATA_STALE")
    decision = decide_retry(method, failure)
    assert (decision.action, decision.server_failed) == (A.RETRY_NEXT, True)
    assert "ACL_DATA_STALE" in decision.reason
    # Any other UNAVAILABLE answer to a write still stands (it may have acted).
    other = CallFailure(K.REFUSED_UNAVAILABLE, server="10.0.0.1:1", reason="CACHE_BEHIND")
    assert decide_retry(WRITE, other).action is A.FAIL


def test_classify_keeps_the_reason_of_an_answer_only() -> None:
    answered = classify(RemoteStatus("UNAVAILABLE", "stale", reason="ACL_DATA_STALE",
                                     answered=True), server="a:1")
    assert (answered.kind, answered.reason) == (K.REFUSED_UNAVAILABLE, "ACL_DATA_STALE")
    # Without trailing metadata it was not a server's answer: no reason to trust.
    broken = classify(RemoteStatus("UNAVAILABLE", "socket closed", reason="ACL_DATA_STALE"),
                      server="a:1")
    assert (broken.kind, broken.reason) == (K.CONNECTION_LOST, "")


def test_term_travels_from_the_status_to_the_decision() -> None:
    failure = classify(RemoteStatus("UNAVAILABLE", "not the leader", leader="b:2", answered=True,
                                    leader_term=42), server="a:1")
    assert (failure.leader_hint, failure.leader_term) == ("b:2", 42)
    decision = decide_retry("/drover.broker.v1.EvalBrokerService/Dequeue", failure)
    assert decision.action is RetryAction.FOLLOW_LEADER
    assert (decision.leader, decision.leader_term) == ("b:2", 42)
    junk = classify(RemoteStatus("UNAVAILABLE", "", leader="b:2"), server="a:1")
    assert junk.leader_term == 0
