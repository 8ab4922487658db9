"""Ending background tasks at shutdown, bounded: nothing hangs.

A stop or close cancels its tasks and waits for them to end. That wait must
be bounded: a task that does not end on its cancel would otherwise hang the
stop, and with it the process's shutdown or a test's teardown, for ever.
The ways one does not end are all bugs, and all have happened: a cancel
swallowed once somewhere on its stack (3.11's ``asyncio.wait_for`` drops
one that lands as its inner awaitable finishes; a ``suppress(BaseException)``
around an await), or a loop that catches ``CancelledError`` and goes on.

The usual shape ``task.cancel(); with suppress(CancelledError): await task``
has two faults, so it is not used for a stop:

* it waits for ever on a task that ignores its cancel, and a deadline
  around it does not help: cancelling a task that awaits another task only
  forwards the cancel to the inner one and keeps waiting for it;
* the ``suppress`` also swallows the *caller's* own cancellation (a stop cut
  short by its own deadline then goes on as if nothing happened).

:func:`cancel_and_wait` waits with :func:`asyncio.wait`, which never cancels
what it waits for and lets the caller's cancel through. Each caller passes
its bound from its own frozen config (a ``stop_timeout`` field, or the grace
it was given). A task still running after the bound is logged by name with
the line it is stuck on, and left behind: the stop goes on.

:func:`run` is :func:`asyncio.run` for a process's main with the same
bound at its end: ``asyncio.run`` cancels every task still alive when main
returns and gathers them with no bound, so one stuck task would keep a
stopped service's process from ever exiting.

No drover imports: every library (``drover.coord``, ``drover.acl``,
``drover.rpc``) and service can use it without depending on another.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Coroutine, Iterable
from typing import Any, TypeVar

__all__ = ["cancel_and_wait", "run", "stuck_at"]

T = TypeVar("T")

log = logging.getLogger(__name__)


async def cancel_and_wait(tasks: Iterable[asyncio.Future[Any] | None], *, within: float,
                          what: str = "stop") -> set[asyncio.Future[Any]]:
    """Cancel ``tasks`` (``None`` entries skipped); wait at most ``within``
    seconds for them all to end.

    Their results and exceptions are dropped (they were told to stop; a
    caller that wants one reads it from the task once it is done). The
    caller's own cancellation is not swallowed. Returns the ones still
    running, each logged as a warning with where it is stuck.
    """
    pending = {t for t in tasks if t is not None and not t.done()}
    for task in pending:
        task.cancel()
    if not pending:
        return set()
    _, stuck = await asyncio.wait(pending, timeout=max(within, 0.0))
    for task in stuck:
        log.warning("%s: task %s did not end within %.1fs of its cancel (at %s); left running",
                    what, _name(task), within, stuck_at(task))
    return stuck


def run(main: Coroutine[Any, Any, T], *, stop_timeout: float, what: str = "exit") -> T:
    """Run ``main`` on a new event loop, like :func:`asyncio.run`, then end
    bounded: the tasks still alive are cancelled and waited for at most
    ``stop_timeout`` (the ones left are logged, and dropped with the loop),
    and so are the async generators' and the default executor's shutdowns.
    """
    loop = asyncio.new_event_loop()
    try:
        asyncio.set_event_loop(loop)
        return loop.run_until_complete(main)
    finally:
        try:
            loop.run_until_complete(_end(loop, stop_timeout, what))
        finally:
            asyncio.set_event_loop(None)
            loop.close()


async def _end(loop: asyncio.AbstractEventLoop, within: float, what: str) -> None:
    me = asyncio.current_task()
    await cancel_and_wait((t for t in asyncio.all_tasks(loop) if t is not me),
                          within=within, what=what)
    for step in (loop.shutdown_asyncgens, loop.shutdown_default_executor):
        try:
            async with asyncio.timeout(within):
                await step()
        except TimeoutError:
            log.warning("%s: %s took over %.1fs; going on", what, step.__name__, within)


def stuck_at(task: asyncio.Future[Any]) -> str:
    """``file:line in function`` of the innermost coroutine ``task`` is
    suspended in, followed down its chain of awaits, asyncio's own frames
    left out (they say "in wait", not whose); ``?`` if it has none."""
    where = "?"
    coro: Any = task.get_coro() if isinstance(task, asyncio.Task) else None
    for _ in range(100):  # an await chain is short; bounded all the same
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is None:
            break
        if not frame.f_code.co_filename.startswith(_ASYNCIO):
            where = f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return where


_ASYNCIO = os.path.dirname(asyncio.__file__) + os.sep


def _name(task: asyncio.Future[Any]) -> str:
    return task.get_name() if isinstance(task, asyncio.Task) else repr(task)
