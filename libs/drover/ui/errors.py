"""A failed drover call as the UI answers it: the CLI's one line, an HTTP status.

The line is :func:`drover.cli.client.describe`'s, so a denial reads in the
browser exactly as ``drover`` prints it (message and ErrorInfo reason).
"""

from __future__ import annotations

import grpc

from drover.cli.client import describe
from drover.rpc.remote import remote_status

#: gRPC status code name -> HTTP status (anything else: 502, drover failed).
_HTTP = {
    "INVALID_ARGUMENT": 400, "OUT_OF_RANGE": 400,
    "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403,
    "NOT_FOUND": 404,
    "ALREADY_EXISTS": 409, "FAILED_PRECONDITION": 409, "ABORTED": 409,
    "RESOURCE_EXHAUSTED": 429,
    "UNAVAILABLE": 503, "DEADLINE_EXCEEDED": 504,
}


def http_status(code: str) -> int:
    return _HTTP.get(code, 502)


def failure(err: grpc.RpcError) -> tuple[int, str, str]:
    """(HTTP status, gRPC code, the CLI's line) of a failed call."""
    code = remote_status(err).code
    return http_status(code), code, describe(err)
