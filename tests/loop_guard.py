"""The test session's event loop ends, bounded, whatever a test left running.

Every test shares one event loop (``asyncio_default_test_loop_scope =
"session"``). When the session ends, pytest-asyncio closes it with
:class:`asyncio.Runner`, which cancels every task still alive and then
gathers them *with no bound*: one task a test left behind that does not end
on its cancel (a swallowed cancel; a loop catching ``CancelledError``) would
hang the end of the run, with nothing saying which task or why. pytest-timeout
only fires after its whole per-test timeout, and blames the last test run.

:func:`no_task_outlives_the_session` is an autouse session fixture that
depends on the session loop, so its teardown runs just before the loop is
closed. It cancels what is left with :func:`drover.tasks.cancel_and_wait`
(bounded by :data:`BOUND`). Tasks still running after that are a bug
somewhere: each is named, with the line it is stuck on, in the error that
fails the run. They are also taken off the loop's task registry, so the runner
cannot wait on them and the session ends at once. That uses asyncio's private
``_unregister_task``; it is test code only, and the alternative is a run that
never ends.

``tests/conftest.py`` imports the fixture, so it applies to every test.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from drover.tasks import cancel_and_wait, stuck_at

#: Seconds the session's end waits for the tasks it cancels.
BOUND = 5.0


class TasksOutlivedTheSession(RuntimeError):
    """Tasks did not end on their cancel at the end of the test session."""


async def end_leftover_tasks(within: float) -> None:
    """Cancel every other task on the running loop and wait up to ``within``
    for them; raise :class:`TasksOutlivedTheSession` naming any still running
    (after taking them off the loop's registry: see the module docstring)."""
    me = asyncio.current_task()
    left = {t for t in asyncio.all_tasks() if t is not me}
    stuck = await cancel_and_wait(left, within=within, what="test session end")
    if not stuck:
        return
    names = []
    for task in stuck:
        # (only tasks were handed in: all_tasks() above)
        assert isinstance(task, asyncio.Task)
        names.append(f"{task.get_name()} at {stuck_at(task)}")
        asyncio.tasks._unregister_task(task)  # type: ignore[arg-type]
    raise TasksOutlivedTheSession(
        f"{len(stuck)} task(s) ignored their cancel for {within:g}s at the end of the test "
        f"session (left behind by a test; a swallowed CancelledError?): " + "; ".join(names))


@pytest.fixture(scope="session", autouse=True)
async def no_task_outlives_the_session() -> AsyncIterator[None]:
    yield
    await end_leftover_tasks(BOUND)
