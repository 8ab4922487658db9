"""Ending background tasks at shutdown, bounded.

A stop cancels its tasks and waits for them to end. That wait must be
bounded: a task that does not end on its cancel (one cancel, swallowed
somewhere on its stack: 3.11's ``asyncio.wait_for`` drops a cancel that
lands as its inner awaitable finishes) would otherwise hang the stop, and
with it the process's shutdown or a test's teardown, for ever. Such a task
is a bug; it is logged by name and left behind, and the stop goes on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

__all__ = ["cancel_and_wait"]

log = logging.getLogger(__name__)


async def cancel_and_wait(tasks: Iterable[asyncio.Future[Any]], *, within: float = 5.0,
                          what: str = "stop") -> set[asyncio.Future[Any]]:
    """Cancel ``tasks``; wait at most ``within`` seconds for them all to end.

    Their results and exceptions are dropped (they were told to stop). The
    caller's own cancellation is not swallowed. Returns the ones still
    running (each logged as a warning).
    """
    pending = {t for t in tasks if not t.done()}
    for task in pending:
        task.cancel()
    if not pending:
        return set()
    _, stuck = await asyncio.wait(pending, timeout=within)
    for task in stuck:
        name = task.get_name() if isinstance(task, asyncio.Task) else repr(task)
        log.warning("%s: task %s did not end within %.1fs of its cancel; left running",
                    what, name, within)
    return stuck
