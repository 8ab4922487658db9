"""Turning a failed forwarded call into a :class:`~drover.proxy.retry.CallFailure`.

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

Pure: status codes arrive as their names, so this module needs no gRPC.
"""

from __future__ import annotations

from collections.abc import Iterable

from drover.proxy.retry import CallFailure, FailureKind

LEADER_METADATA = "drover-leader"
LEADER_TERM_METADATA = "drover-leader-term"

#: Lower-case fragments of UNAVAILABLE details that mean "never connected".
NOT_SENT_MARKERS: tuple[str, ...] = (
    "failed to connect",
    "connection refused",
    "dns resolution failed",
    "connections to all backends failing",
    "no route to host",
    "name resolution",
)


def classify(
    code: str,
    details: str,
    trailing: Iterable[tuple[str, str | bytes]],
    *,
    server: str,
    relayed: bool = False,
) -> CallFailure:
    """The failure of a call to ``server`` that ended with status ``code``."""
    trailing = list(trailing)
    hint = next((str(v) for k, v in trailing if k == LEADER_METADATA), None)
    term_text = next((str(v) for k, v in trailing if k == LEADER_TERM_METADATA), "")
    term = int(term_text) if term_text.isdigit() else 0
    if code == "CANCELLED":
        kind = FailureKind.CANCELLED
    elif code == "DEADLINE_EXCEEDED":
        kind = FailureKind.DEADLINE_EXCEEDED
    elif code == "FAILED_PRECONDITION":
        kind = FailureKind.REFUSED_PRECONDITION
    elif code == "UNAVAILABLE":
        lowered = details.lower()
        if trailing:
            kind = FailureKind.REFUSED_UNAVAILABLE
        elif any(marker in lowered for marker in NOT_SENT_MARKERS):
            kind = FailureKind.NOT_SENT
        else:
            kind = FailureKind.CONNECTION_LOST
    else:
        kind = FailureKind.ANSWERED
    return CallFailure(kind=kind, server=server, leader_hint=hint, relayed=relayed,
                       leader_term=term)
