"""The delete txns of purge and GC, each run through ``transact`` (the
pages and their rules: :mod:`drover.state.core.reap`).

No call holds etcd for long: a big purge is many short txns, as eval
delete is many short calls. A GC page that conflicts fails alone (the GC
skips it); a purge page that conflicts is re-planned on a fresh view.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any

from drover.coord.fence import Fence
from drover.state.core import codec
from drover.state.core.reap import (
    Doomed,
    PageDone,
    Tally,
    plan_delete_page,
    plan_purge_page,
)
from drover.state.pipeline import Planner

#: :meth:`drover.state.pipeline.WriteCalls.transact`'s shape.
Transact = Callable[..., Awaitable[Any]]


async def delete_page(transact: Transact, keys: codec.KeyCodec, page: Sequence[Doomed],
                      tally: Tally, fence: Fence | None) -> int:
    """One GC txn: delete ``page``, each compared (Conflict: the caller skips it)."""
    planner: Planner = lambda view: plan_delete_page(keys, page)  # noqa: E731
    done: PageDone = await transact(planner, fence)
    tally.add(done.doomed, done.ops)
    return done.revision


async def purge_job(transact: Transact, keys: codec.KeyCodec, ns: str, job_id: str,
                    fence: Fence | None) -> tuple[Tally, int]:
    """Remove the job and all it owns, page by page; the tally and last revision."""
    tally = Tally()
    started = False
    while True:
        planner = partial(plan_purge_page, keys=keys, ns=ns, job_id=job_id, started=started)
        done: PageDone = await transact(planner, fence, sync_first=not started)
        started = True
        if done.doomed:
            tally.add(done.doomed, done.ops)
        if done.last:
            return tally, done.revision
