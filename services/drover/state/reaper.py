"""The delete txns of purge and GC, run through :meth:`Base.transact`
(the pages and their rules: :mod:`drover.state.core.reap`).

No call holds etcd for long: a big purge is many short txns, as eval
delete is many short calls. A GC page that conflicts fails alone (the GC
skips it); a purge page that conflicts is re-planned on a fresh view.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from drover.coord.fence import Fence
from drover.state.core.reap import (
    JOB_OWNED,
    PAGE,
    Doomed,
    PageDone,
    Tally,
    job_owned,
    pages,
    plan_delete_page,
    plan_purge_page,
)
from drover.state.service_base import Base

__all__ = ["JOB_OWNED", "PAGE", "Doomed", "Reaper", "Tally", "job_owned", "pages"]


class Reaper(Base):
    """The delete txns of purge and GC (an RPC group's base)."""

    async def delete_page(self, page: Sequence[Doomed], tally: Tally, *,
                          fence: Fence | None = None) -> int:
        """One GC txn: delete ``page``, each compared (Conflict: skip it)."""
        keys = self.keys
        done: PageDone = await self.transact(lambda view: plan_delete_page(keys, page), fence)
        tally.add(done.doomed, done.ops)
        return done.revision

    async def purge_job(
        self, ns: str, job_id: str, fence: Fence | None = None
    ) -> tuple[Tally, int]:
        """Remove the job and all it owns, page by page; the tally and last revision."""
        tally = Tally()
        started = False
        keys = self.keys
        while True:
            planner = partial(plan_purge_page, keys=keys, ns=ns, job_id=job_id, started=started)
            done: PageDone = await self.transact(planner, fence, sync_first=not started)
            started = True
            if done.doomed:
                tally.add(done.doomed, done.ops)
            if done.last:
                return tally, done.revision
