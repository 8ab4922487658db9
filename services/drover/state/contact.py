"""When this replica last heard from etcd: QueryMeta's ``last_contact``.

Any successful etcd call that needed etcd's quorum counts -- a consistent
read's marker Get, a write's txn, the initial list, and every watch response
(which the cache reports with :meth:`ContactStore.touch`). Creating a watch
does not: a member cut off from its quorum still answers it. Counting only
watch traffic made an idle but healthy replica look cut off. :class:`ContactStore` wraps a
:class:`~drover.coord.kv.KVStore` and stamps the monotonic clock after
each call that returns; failures leave the stamp alone, so the age keeps
growing while etcd is unreachable.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from drover.coord.kv import Compare, KVStore, Op, RangePage, TxnResult, Watch


class ContactStore:
    """A KVStore that remembers its last successful etcd contact."""

    def __init__(self, inner: KVStore, clock: Callable[[], float] = time.monotonic) -> None:
        self.inner = inner
        self._clock = clock
        self._last = clock()
        # The newest etcd revision any response header showed (reads, txns):
        # what the cache's applied revision lags behind.
        self.seen_revision = 0

    def _saw(self, revision: int) -> None:
        if revision > self.seen_revision:
            self.seen_revision = revision

    def touch(self) -> None:
        self._last = self._clock()

    def age(self) -> float:
        """Seconds since the last successful contact."""
        return max(0.0, self._clock() - self._last)

    async def range(
        self, key: bytes, range_end: bytes, *, limit: int = 0, revision: int = 0,
        count_only: bool = False,
    ) -> RangePage:
        page = await self.inner.range(key, range_end, limit=limit, revision=revision,
                                      count_only=count_only)
        self.touch()
        self._saw(page.revision)
        return page

    async def txn(self, compares: Sequence[Compare], ops: Sequence[Op]) -> TxnResult:
        result = await self.inner.txn(compares, ops)
        self.touch()
        self._saw(result.revision)
        return result

    async def revision(self) -> int:
        rev = await self.inner.revision()
        self.touch()
        self._saw(rev)
        return rev

    async def watch(self, key: bytes, range_end: bytes, start_revision: int) -> Watch:
        # Not contact: a member cut off from its quorum still creates
        # watches (an isolated leader does until check-quorum deposes it), so
        # an answered create proves nothing about how current the cache is.
        # The watch's responses count (the cache touches on each batch).
        return await self.inner.watch(key, range_end, start_revision)

    async def compact(self, revision: int) -> None:
        await self.inner.compact(revision)
        self.touch()
