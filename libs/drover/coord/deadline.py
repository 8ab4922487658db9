"""The caller's deadline, carried to every etcd call made on its behalf.

A gRPC handler that calls etcd sets it once (:func:`caller_deadline`, from
``context.time_remaining()``); every etcd call below clips its own timeout to
what is left, so no etcd call outlives the request that caused it (a client
that gave up after 2 s is not answered by a write that ran for 10). A
contextvar, because the deadline belongs to the request's task and must not
leak into background tasks (they start with a copy of the context taken when
they were created, and set their own).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

from drover.coord.clock import Clock, monotonic

__all__ = ["bounded", "caller_deadline", "remaining"]

_DEADLINE: ContextVar[float | None] = ContextVar("drover_etcd_deadline", default=None)


@contextlib.contextmanager
def caller_deadline(seconds: float | None, *, clock: Clock = monotonic) -> Iterator[None]:
    """Within the block, etcd calls end at most ``seconds`` from now (None:
    no caller deadline). Nested scopes only ever shorten it."""
    if seconds is None:
        yield
        return
    at = clock() + max(0.0, seconds)
    outer = _DEADLINE.get()
    token = _DEADLINE.set(at if outer is None else min(at, outer))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def remaining(*, clock: Clock = monotonic) -> float | None:
    """Seconds left of the caller's deadline (None: there is none)."""
    at = _DEADLINE.get()
    return None if at is None else at - clock()


def bounded(timeout: float, *, clock: Clock = monotonic) -> float:
    """``timeout`` clipped to the caller's deadline."""
    left = remaining(clock=clock)
    return timeout if left is None else max(0.0, min(timeout, left))
