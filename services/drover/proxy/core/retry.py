"""When may the proxy retry a failed call on another server? A pure policy.

Forwarding must not turn one client call into two effects. A call may be
sent again elsewhere only when that cannot happen twice:

* the request never left the proxy (:attr:`FailureKind.NOT_SENT`: the
  connection failed before any byte was sent), whatever the method; or
* the method is a read (:func:`is_read`), which has no effect to repeat.

A replica that answers UNAVAILABLE or FAILED_PRECONDITION with a
``drover-leader`` hint refused the call because it is not the leader, before
acting on it, so any method follows the hint (:attr:`RetryAction.FOLLOW_LEADER`).
So does a replica that answers UNAVAILABLE with a reason of
:data:`REFUSED_BEFORE_ACTING` (its ACL data went stale: the ACL interceptor
refused the call before any handler ran): a write is sent to the next
server (:attr:`RetryAction.RETRY_NEXT`), and the stale one goes to the back.
Once response messages of a stream were relayed to the client, the stream
is not retried as such: the client would see messages twice or out of order.
``Subscribe`` is resumed instead (:mod:`drover.rpc.resume`): reopened
elsewhere from the last index delivered.

A write whose attempt broke after it may have reached the server
(:attr:`FailureKind.CONNECTION_LOST`, :attr:`FailureKind.STALLED`) is
answered UNAVAILABLE ``OUTCOME_UNKNOWN`` by the proxy at once
(:data:`OUTCOME_UNKNOWN_KINDS`): the client decides whether to repeat it.

Which methods are reads is the one rule of :mod:`drover.rpc.reads`
(``Get*``/``List*``/``Count*``, ``Subscribe``, the health check, reflection);
everything else is a write, ``Dequeue`` and ``Ack`` included.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from drover.rpc.reads import is_read


class FailureKind(enum.Enum):
    """How a forwarded call failed, as far as retry safety is concerned."""

    #: The connection failed before the request was sent (UNAVAILABLE, no
    #: bytes sent: refused, unreachable, TLS handshake).
    NOT_SENT = "not_sent"
    #: The transport broke after the request may have reached the server.
    CONNECTION_LOST = "connection_lost"
    #: The server answered UNAVAILABLE (shutting down, not caught up, not leader).
    REFUSED_UNAVAILABLE = "refused_unavailable"
    #: The server answered FAILED_PRECONDITION.
    REFUSED_PRECONDITION = "refused_precondition"
    #: The proxy ended the attempt: the server stopped answering (no sign of
    #: life within the hold timeout) or left membership while it was in
    #: flight. The request may have been applied.
    STALLED = "stalled"
    #: The call's deadline passed: the caller's budget is spent.
    DEADLINE_EXCEEDED = "deadline_exceeded"
    #: The client cancelled the call.
    CANCELLED = "cancelled"
    #: The server answered with any other status: its verdict stands.
    ANSWERED = "answered"


@dataclass(frozen=True)
class CallFailure:
    kind: FailureKind
    #: The server that failed the call.
    server: str = ""
    #: The ``drover-leader`` metadata of the answer, if any.
    leader_hint: str | None = None
    #: Response messages were already relayed to the client (streams).
    relayed: bool = False
    #: The ``drover-leader-term`` of the hint (0: not given).
    leader_term: int = 0
    #: The ErrorInfo reason of the server's answer ("" if none).
    reason: str = ""


#: UNAVAILABLE reasons a drover server gives only before acting on the call,
#: so that any method may be sent elsewhere: ``ACL_DATA_STALE`` (the ACL
#: interceptor's refusal, before the handler; :mod:`drover.acl.freshness`).
REFUSED_BEFORE_ACTING: frozenset[str] = frozenset({"ACL_DATA_STALE"})


class RetryAction(enum.Enum):
    #: Send the call to the next server the list picks.
    RETRY_NEXT = "retry_next"
    #: Record the hint (``ServerList.follow_hint``) and send the call there.
    FOLLOW_LEADER = "follow_leader"
    #: Return the failure to the client.
    FAIL = "fail"


@dataclass(frozen=True)
class RetryDecision:
    action: RetryAction
    #: Whether to report the server to ``ServerList.notify_failed``.
    server_failed: bool
    reason: str
    #: The address to follow, for :attr:`RetryAction.FOLLOW_LEADER`.
    leader: str | None = None
    #: The term of that leader, if the hint said (0: not given).
    leader_term: int = 0


_TRANSPORT = frozenset({FailureKind.NOT_SENT, FailureKind.CONNECTION_LOST, FailureKind.STALLED})
#: Failures after which a write's outcome is unknown: it may have been applied.
OUTCOME_UNKNOWN_KINDS = frozenset({FailureKind.CONNECTION_LOST, FailureKind.STALLED})


def decide_retry(method: str, failure: CallFailure) -> RetryDecision:
    """The policy of the module docstring, one rule per branch, first match wins.

    The caller bounds the number of attempts (hints could point in a circle).
    """
    kind = failure.kind
    transport_failed = kind in _TRANSPORT
    if failure.relayed:
        return RetryDecision(
            RetryAction.FAIL, transport_failed, "response messages already reached the client"
        )
    if kind is FailureKind.CANCELLED:
        return RetryDecision(RetryAction.FAIL, False, "the client cancelled the call")
    if kind is FailureKind.DEADLINE_EXCEEDED:
        # A long poll may legitimately run to its deadline: not a server failure.
        return RetryDecision(RetryAction.FAIL, False, "the call's deadline passed")
    hint = failure.leader_hint
    refused = kind in (FailureKind.REFUSED_UNAVAILABLE, FailureKind.REFUSED_PRECONDITION)
    if refused and hint and hint != failure.server:
        return RetryDecision(
            RetryAction.FOLLOW_LEADER, False, f"not the leader; the leader is {hint}", hint,
            failure.leader_term,
        )
    if kind is FailureKind.NOT_SENT:
        return RetryDecision(RetryAction.RETRY_NEXT, True, "the request was never sent")
    if kind is FailureKind.REFUSED_UNAVAILABLE and failure.reason in REFUSED_BEFORE_ACTING:
        return RetryDecision(RetryAction.RETRY_NEXT, True,
                             f"refused before acting ({failure.reason})")
    read = is_read(method)
    if kind in (FailureKind.CONNECTION_LOST, FailureKind.STALLED, FailureKind.REFUSED_UNAVAILABLE):
        if read:
            return RetryDecision(RetryAction.RETRY_NEXT, True, "a read is safe to repeat")
        return RetryDecision(
            RetryAction.FAIL, True, "a write may have been applied; not repeating it"
        )
    return RetryDecision(RetryAction.FAIL, False, "the server answered; its verdict stands")
