"""Inbound: what a failed call to a drover service said, as a drover error.

The one place a remote status is read back (the outbound half, a drover
error becoming a status, is :mod:`drover.rpc.errors`); this module decodes
the call, :mod:`drover.remote_errors` (pure) maps it. Every client in the
tree uses it: the broker's and the watcher's state clients, the proxy's
failure classification and the ``drover`` CLI.

:func:`remote_status` decodes a failed call once into a :class:`RemoteStatus`
(code name, details, ErrorInfo reason and metadata, the ``drover-leader``
hint, and whether a server answered at all: drover servers always attach
trailing metadata, a broken transport never does). :func:`to_error` turns
that into the :class:`~drover.errors.DroverError` the server raised, as far
as the client can know it: the class for a reason it knows
(``FENCE_LOST`` -> :class:`~drover.errors.FenceLost`, ``NOT_LEADER`` ->
:class:`~drover.errors.NotLeader`), else the class of the status code's
kind, always with the remote reason and metadata kept, so ``err.reason ==
"INDEX_COMPACTED"`` reads the same on both sides. Codes with no drover kind
(CANCELLED, UNKNOWN, UNIMPLEMENTED, ...) are "that service is unusable now":
UNAVAILABLE.
"""

from __future__ import annotations

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from drover.errors import DroverError
from drover.remote_errors import (
    LEADER_METADATA,
    LEADER_TERM_METADATA,
    RemoteStatus,
    to_error,
)

__all__ = [
    "error_info",
    "from_rpc_error",
    "leader_hint",
    "leader_term",
    "remote_status",
]

# -- the gRPC half ------------------------------------------------------------


def error_info(err: grpc.RpcError) -> error_details_pb2.ErrorInfo | None:
    """The ErrorInfo detail of a failed call, if the server sent one."""
    try:
        status = rpc_status.from_call(err)  # type: ignore[arg-type]
    except Exception:  # a status without parseable details
        return None
    if status is None:
        return None
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            return info
    return None


def _trailing(err: grpc.RpcError) -> tuple[tuple[str, str | bytes], ...]:
    get = getattr(err, "trailing_metadata", None)
    if get is None:
        return ()
    try:
        return tuple(get() or ())
    except Exception:  # a locally made error without metadata
        return ()


def leader_hint(err: grpc.RpcError) -> str | None:
    """The ``drover-leader`` address a follower answered with, if any."""
    for key, value in _trailing(err):
        if key == LEADER_METADATA:
            return value.decode() if isinstance(value, bytes) else str(value)
    return None


def leader_term(err: grpc.RpcError) -> int:
    """The term of the ``drover-leader`` hint (0: none given)."""
    for key, value in _trailing(err):
        if key == LEADER_TERM_METADATA:
            text = value.decode() if isinstance(value, bytes) else str(value)
            return int(text) if text.isdigit() else 0
    return 0


def remote_status(err: grpc.RpcError) -> RemoteStatus:
    """Decode a failed call once."""
    code = err.code() if hasattr(err, "code") else grpc.StatusCode.UNKNOWN
    details = err.details() if hasattr(err, "details") else str(err)
    info = error_info(err)
    return RemoteStatus(
        code=code.name,
        details=details or "",
        reason=info.reason if info is not None else "",
        metadata=dict(info.metadata) if info is not None else {},
        leader=leader_hint(err),
        leader_term=leader_term(err),
        answered=bool(_trailing(err)),
    )


def from_rpc_error(err: grpc.RpcError) -> DroverError:
    """The drover error a failed call stands for (see :func:`to_error`)."""
    return to_error(remote_status(err))
