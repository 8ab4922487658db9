"""Turning a failed forwarded call into a :class:`~drover.proxy.core.retry.CallFailure`.

gRPC does not say whether a failed call's request reached the server, so the
proxy reads it from what the failure looks like, and errs on the side of
"it may have been sent" (a write is then not repeated):

* UNAVAILABLE whose details say the channel could not connect ("failed to
  connect", "connection refused", "DNS resolution failed", ...) with no
  metadata from a server: the call failed while picking a connection, so
  no byte was sent (:attr:`FailureKind.NOT_SENT`);
* UNAVAILABLE with trailing metadata (drover servers always attach an
  ErrorInfo, and a leader hint when they have one): the server answered
  (:attr:`FailureKind.REFUSED_UNAVAILABLE`);
* any other UNAVAILABLE (GOAWAY, reset, "Socket closed"): the transport
  broke, the request may have been applied (:attr:`FailureKind.CONNECTION_LOST`).

Pure: it reads a decoded :class:`~drover.remote_errors.RemoteStatus` (code
names, no gRPC objects).
"""

from __future__ import annotations

from drover.proxy.core.retry import CallFailure, FailureKind
from drover.remote_errors import RemoteStatus

#: Lower-case fragments of UNAVAILABLE details that mean "never connected".
NOT_SENT_MARKERS: tuple[str, ...] = (
    "failed to connect",
    "connection refused",
    "dns resolution failed",
    "connections to all backends failing",
    "no route to host",
    "name resolution",
)


def classify(status: RemoteStatus, *, server: str, relayed: bool = False) -> CallFailure:
    """The failure of a call to ``server``, as :func:`drover.rpc.remote.remote_status`
    decoded it (the one inbound decoding every drover client shares)."""
    code = status.code
    if code == "CANCELLED":
        kind = FailureKind.CANCELLED
    elif code == "DEADLINE_EXCEEDED":
        kind = FailureKind.DEADLINE_EXCEEDED
    elif code == "FAILED_PRECONDITION":
        kind = FailureKind.REFUSED_PRECONDITION
    elif code == "UNAVAILABLE":
        lowered = status.details.lower()
        if status.answered:
            kind = FailureKind.REFUSED_UNAVAILABLE
        elif any(marker in lowered for marker in NOT_SENT_MARKERS):
            kind = FailureKind.NOT_SENT
        else:
            kind = FailureKind.CONNECTION_LOST
    else:
        kind = FailureKind.ANSWERED
    return CallFailure(kind=kind, server=server, leader_hint=status.leader, relayed=relayed,
                       leader_term=status.leader_term,
                       reason=status.reason if status.answered else "")
