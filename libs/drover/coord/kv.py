"""The typed etcd operations drover uses, and the seam both KV backends meet.

:class:`KVStore` is the consumer's Protocol: paged ranges (etcd refuses
responses over 4 MiB, so large reads page with ``limit`` and a moving start
key), transactions of compares and puts/deletes, the current revision, a
watch from a revision that reports every response's revision, progress and
compaction, compaction itself, and leases (grant, one keepalive, revoke)
with puts attached to them.

Beside it, the small Protocols each coord component takes (the consumer
owns the seam): :class:`Ranges`, :class:`Txns`, :class:`Watches` and
:class:`Leases` (grant, revoke, and a keepalive stream a session renews on).

Two implementations: :class:`drover.coord.etcd_kv.EtcdKV` on a real etcd
and :class:`drover.coord.memkv.MemoryKV` in memory; ``tests/contract``
runs one suite against both. Both raise the same errors: :class:`Compacted`
for history etcd no longer has, :class:`LeaseNotFound` for an expired or
revoked lease, :class:`EtcdUnavailable` when the store cannot answer (all
defined, with the rest of the library's errors, in :mod:`drover.coord.errors`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from drover.coord.errors import Compacted, LeaseNotFound

__all__ = [
    "KV", "MAX_TXN_OPS", "Compacted", "Compare", "Delete", "KVStore", "KeepAlives", "LeaseKV",
    "LeaseNotFound", "Leases", "Newest", "Op", "Put", "RangePage", "RangeSummary", "Ranges",
    "Summaries", "TxnResult", "Txns",
    "Watch", "WatchBatch", "WatchEvent", "Watches", "objects_per_txn", "prefix_end",
]

#: etcd's default ``--max-txn-ops``: the cap on the compares, and separately
#: on the operations (puts/deletes) of either branch, of one transaction.
MAX_TXN_OPS = 128


def objects_per_txn(max_txn_ops: int) -> int:
    """Objects one write to the state service may carry when etcd caps a txn
    at ``max_txn_ops``: less the revision marker the state service adds to
    every write. The state service's request cap, and the size the eval
    broker's writer batches to."""
    return max_txn_ops - 1


# KV, WatchEvent, Compare, Put and Delete are NamedTuples, not frozen
# dataclasses: one of each is made per key of every range page, watch event
# and written object (a compare and a put per evaluation the broker writes),
# and a NamedTuple is about twice as fast to construct. Put and Delete are
# told apart by type (``isinstance``), never by shape.


class KV(NamedTuple):
    key: bytes
    value: bytes
    create_revision: int
    mod_revision: int


class Compare(NamedTuple):
    """``target(key) == value``; target is "mod", "create", "version" or
    "lease" (the id of the lease the key is attached to, 0: none)."""

    key: bytes
    target: str
    value: int


class Put(NamedTuple):
    """Put ``value`` at ``key``; attached to ``lease`` when not 0 (the key
    is deleted when the lease expires or is revoked)."""

    key: bytes
    value: bytes
    lease: int = 0


class Delete(NamedTuple):
    key: bytes


Op = Put | Delete


@dataclass(frozen=True, slots=True)
class RangePage:
    kvs: list[KV]
    more: bool
    revision: int
    count: int = 0


@dataclass(frozen=True, slots=True)
class RangeSummary:
    """A range's size and last write, read linearizably at ``revision``."""

    revision: int
    count: int
    #: The mod_revision of the key written last (0: the range is empty).
    newest: int


@dataclass(frozen=True, slots=True)
class TxnResult:
    succeeded: bool
    revision: int


class WatchEvent(NamedTuple):
    """A put (``deleted`` False) or delete of one key at ``kv.mod_revision``."""

    kv: KV
    deleted: bool


@dataclass(frozen=True, slots=True)
class WatchBatch:
    """One watch response: events in revision order, and the revision the
    watch has reached (every change up to ``revision`` has been sent)."""

    events: list[WatchEvent] = field(default_factory=list)
    revision: int = 0


class Watch(Protocol):
    def __aiter__(self) -> AsyncIterator[WatchBatch]: ...

    def request_progress(self) -> None: ...

    def skip_applied(self, applied: Callable[[], int]) -> None:
        """The consumer applies some changes before the watch delivers them
        (the state cache applies its own committed writes): from now on,
        events at or below ``applied()`` (asked once per response) are left
        out of the batches, not even built. A response left with no events
        still comes, as an empty batch at its last event's revision (which
        the consumer has)."""
        ...

    def suspect(self) -> None:
        """The owner saw the watch go silent: have its member checked now."""
        ...

    async def close(self) -> None: ...


class KeepAlives(Protocol):
    """One lease's keepalive stream: each :meth:`send` is answered, in order,
    by one TTL from the iterator (<= 0: the lease is gone). A broken stream
    raises :class:`~drover.coord.errors.EtcdUnavailable` from either."""

    async def send(self) -> None: ...

    def __aiter__(self) -> AsyncIterator[int]: ...

    def suspect(self) -> None:
        """A send went unanswered too long: have its member checked now."""
        ...

    def cancel(self) -> None: ...


class Ranges(Protocol):
    async def range(
        self, key: bytes, range_end: bytes, *, limit: int = 0, revision: int = 0,
        count_only: bool = False,
    ) -> RangePage: ...


class Newest(Protocol):
    async def newest(self, key: bytes, range_end: bytes) -> KV | None:
        """The key in ``[key, range_end)`` modified last, value omitted (None:
        the range is empty). One sorted, limit-1, keys-only read on etcd."""
        ...


class Summaries(Protocol):
    async def summary(self, key: bytes, range_end: bytes) -> RangeSummary:
        """How many keys ``[key, range_end)`` holds and when the newest was
        written, with the store's revision, in one linearizable read (on
        etcd: sorted, limit 1, keys only; etcd visits every key of the range,
        so meant for small ones such as the ACL prefix)."""
        ...


class Txns(Protocol):
    async def txn(self, compares: Sequence[Compare], ops: Sequence[Op]) -> TxnResult: ...


class Watches(Protocol):
    async def watch(self, key: bytes, range_end: bytes, start_revision: int, *,
                    progress_notify: bool = False) -> Watch:
        """Every change in ``[key, range_end)`` from ``start_revision`` (0:
        from the next). ``progress_notify``: etcd also sends a progress
        notification now and then while idle (every 10 min by default)."""
        ...


class Leases(Protocol):
    """What a session needs: a lease, its keepalive stream, its revocation."""

    @property
    def suspect_after(self) -> float:
        """Seconds a keepalive may go unanswered before its member is suspect."""
        ...

    async def lease_grant(self, ttl: int) -> int: ...

    def keepalives(self, lease: int) -> KeepAlives:
        """Open a keepalive stream (require-leader on etcd): :class:`ClientClosed`
        if the client is closed."""
        ...

    async def lease_revoke(self, lease: int) -> None: ...


class KVStore(Protocol):
    """The operations the state service uses (no leases)."""

    async def range(
        self, key: bytes, range_end: bytes, *, limit: int = 0, revision: int = 0,
        count_only: bool = False,
    ) -> RangePage: ...

    async def txn(self, compares: Sequence[Compare], ops: Sequence[Op]) -> TxnResult: ...

    async def revision(self) -> int: ...

    async def watch(self, key: bytes, range_end: bytes, start_revision: int) -> Watch: ...

    async def compact(self, revision: int) -> None: ...


class LeaseKV(KVStore, Leases, Protocol):
    """A :class:`KVStore` with leases: both backends are one."""

    async def lease_grant(self, ttl: int) -> int: ...

    async def lease_keepalive(self, lease: int) -> int:
        """Renew ``lease``; its TTL in seconds. :class:`LeaseNotFound` if gone."""
        ...

    async def lease_revoke(self, lease: int) -> None: ...


def prefix_end(prefix: bytes) -> bytes:
    """The range end covering every key that starts with ``prefix``."""
    b = bytearray(prefix)
    while b:
        if b[-1] < 0xFF:
            b[-1] += 1
            return bytes(b)
        b.pop()
    return b"\0"
