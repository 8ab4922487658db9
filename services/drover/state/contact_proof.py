"""Whether this replica is in touch with etcd, proved when in doubt.

Contact (:mod:`drover.state.contact`) comes from any successful etcd call,
so an idle but healthy replica may look silent. :class:`ContactProof`
answers "heard from etcd within ``bound`` seconds?" from the stamp when it
can; past the bound, one consistent read (:meth:`Cache.sync`, bounded by the
cache's marker timeout) decides -- shared by every caller asking meanwhile,
so a cut replica under many reads sends etcd one probe at a time. Used by
Subscribe's heartbeats (``SubscribeConfig.max_silence``) and by bounded
stale reads (``QueryOptions.max_stale``).
"""

from __future__ import annotations

import asyncio

from drover.state.cache import Cache


class ContactProof:
    def __init__(self, cache: Cache) -> None:
        self.cache = cache
        self._proof: asyncio.Future[bool] | None = None

    async def within(self, bound: float) -> bool:
        """True if the replica heard from etcd within ``bound`` seconds, or
        a consistent read succeeds now (the cache then caught up)."""
        if self.cache.last_contact() <= bound:
            return True
        if self._proof is None or self._proof.done():
            self._proof = asyncio.ensure_future(self._prove())
        return await asyncio.shield(self._proof)

    async def _prove(self) -> bool:
        try:
            await self.cache.sync()
        except Exception:  # etcd unreachable, or the cache cannot catch up
            return False
        return True
