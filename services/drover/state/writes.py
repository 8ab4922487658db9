"""Every object write: one etcd txn, compared, fenced, and marked.

Each txn carries (a) the caller's compares (``mod_revision`` of every object
it read, so a concurrent change aborts it rather than being overwritten),
(b) for leader writers, the fence ``create_revision(leader_key) == term``
from the ``drover-fence`` metadata, and (c) a put of the cache's revision
marker (:func:`drover.state.cache.marker_put`), which is what makes
consistent reads exact. A failed txn is either :class:`FenceLost` (the
fence key is gone or has another term) or :class:`Conflict` (re-read and
retry). After success this replica's cache applies the txn at once when it
is exactly one revision behind it (:meth:`Cache.apply_committed`: the usual
case, and no watch round trip), else the write waits briefly for the watch
to deliver it; either way the writer reads its own write here even with
``stale``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from drover.coord.fence import FENCE_METADATA, Fence, parse_fence
from drover.coord.kv import Compare, KVStore, Op, objects_per_txn
from drover.errors import Conflict, FenceLost, InvalidArgument, Unavailable
from drover.state.cache import Cache, marker_put
from drover.state.config import WriterConfig
from drover.state.core import codec
from drover.state.core.rules import MAX_OBJECT_OPS

__all__ = ["MAX_OBJECT_OPS", "Writer", "WriterConfig", "fence_from"]


def fence_from(metadata: Iterable[tuple[str, Any]]) -> Fence | None:
    """The ``drover-fence`` of a call's metadata, if any."""
    for key, value in metadata:
        if key == FENCE_METADATA:
            return parse_fence(str(value))
    return None


class Writer:
    def __init__(self, store: KVStore, keys: codec.KeyCodec, cache: Cache,
                 config: WriterConfig | None = None) -> None:
        self.store, self.keys, self.cache = store, keys, cache
        self.config = config or WriterConfig()
        self.max_txn_ops = self.config.max_txn_ops

    async def commit(
        self, compares: Sequence[Compare], ops: Sequence[Op], fence: Fence | None = None,
        *, conflict: str = "an object changed concurrently; re-read and retry",
    ) -> int:
        """Apply ``ops`` if every compare holds; the txn's revision."""
        cmps = list(compares)
        if fence is not None:
            cmps.append(Compare(fence.leader_key.encode(), "create", fence.term))
        if len(ops) > objects_per_txn(self.max_txn_ops) or len(cmps) > self.max_txn_ops:
            raise InvalidArgument(
                f"the request writes {len(ops)} objects with {len(cmps)} preconditions; one "
                f"etcd txn here holds at most {self.max_txn_ops} of either (split it)",
                metadata={"field": "request"})
        committed = [*ops, marker_put(self.keys)]
        result = await self.store.txn(cmps, committed)
        if not result.succeeded:
            if fence is not None:
                page = await self.store.range(fence.leader_key.encode(), b"")
                current = page.kvs[0].create_revision if page.kvs else 0
                if current != fence.term:
                    raise FenceLost(
                        f"fence {fence.header()} lost: the leader key "
                        + (f"now has term {current}" if current else "is gone"),
                        metadata={"leader_key": fence.leader_key, "term": str(fence.term)},
                    )
            raise Conflict(conflict)
        if self.cache.apply_committed(result.revision, committed):
            return result.revision  # read-your-write with no watch round trip
        try:
            await self.cache.wait_for_revision(result.revision, within=2.0)
        except Unavailable:
            pass  # the write is durable; only read-your-write on this replica waits
        return result.revision
