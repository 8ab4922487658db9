"""The one polling helper of the tests: wait until a check holds.

``eventually`` (async; the check may be sync or async) and ``until`` (sync,
for tests that drive processes) call ``check`` every ``step`` seconds until
it returns something truthy, and return that; past ``within`` seconds they
fail with an AssertionError naming ``what``. ``tolerate`` lists exceptions
that count as "not yet" (a CLI answering half-written JSON while a process
starts); ``detail`` adds what was last seen to the failure.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["eventually", "until"]


def _failure(within: float, what: str, detail: Callable[[], Any] | None) -> AssertionError:
    seen = f": {detail()}" if detail is not None else ""
    return AssertionError(f"timed out after {within}s waiting for {what}{seen}")


async def eventually(check: Callable[[], Any | Awaitable[Any]], within: float = 5.0,
                     what: str = "condition", *, step: float = 0.02,
                     tolerate: tuple[type[BaseException], ...] = (),
                     detail: Callable[[], Any] | None = None) -> Any:
    loop = asyncio.get_running_loop()
    end = loop.time() + within
    while True:
        try:
            got = check()
            if inspect.isawaitable(got):
                got = await got
        except tolerate:
            got = None
        if got:
            return got
        if loop.time() > end:
            raise _failure(within, what, detail)
        await asyncio.sleep(step)


def until(check: Callable[[], Any], within: float, what: str = "condition", *,
          step: float = 0.2, tolerate: tuple[type[BaseException], ...] = (),
          detail: Callable[[], Any] | None = None) -> Any:
    end = time.monotonic() + within
    while True:
        try:
            got = check()
        except tolerate:
            got = None
        if got:
            return got
        if time.monotonic() > end:
            raise _failure(within, what, detail)
        time.sleep(step)
