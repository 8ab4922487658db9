"""The etcd operations the state service uses, behind a narrow Protocol.

:class:`~drover.coord.kv.KVStore` (the one etcd layer's types live in
:mod:`drover.coord.kv`; its in-memory twin is :mod:`drover.coord.memkv`) is
the seam: paged ranges (etcd refuses responses over
4 MiB, so every large read pages with ``limit`` and a moving start key),
transactions of compares and puts/deletes (capped at :data:`MAX_TXN_OPS`,
etcd's default ``--max-txn-ops``), the current revision, and a prefix watch
that reports every response's revision, on-demand progress and compaction.

:class:`EtcdStore` implements it on the raw etcd v3 stubs, through the
health-checked endpoint pool of a :class:`drover.coord.EtcdClient` (or, for
tests and benches, one plain channel): aetcd's own range has no
``limit``/``revision`` and its watcher splits responses into single events,
losing the revision boundaries and the progress notifications the cache
needs to prove it is current. Through the pool, reads retry on another etcd
member, a txn whose answer is lost raises
:class:`~drover.coord.errors.OutcomeUnknown` (never retried), the watch
carries etcd's require-leader metadata and ends when its member turns bad,
and every call ends by the gRPC caller's deadline
(:mod:`drover.coord.deadline`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import grpc
from aetcd import rpc
from opentelemetry.trace import SpanKind

from drover.coord.kv import (
    KV,
    Compacted,
    Compare,
    Delete,
    KVStore,
    LeaseKV,
    LeaseNotFound,
    Op,
    Put,
    RangePage,
    TxnResult,
    Watch,
    WatchBatch,
    WatchEvent,
    prefix_end,
)
from drover.coord.pool import Endpoint, EndpointPool
from drover.errors import Unavailable
from drover.telemetry import meter, tracer

#: etcd's default ``--max-txn-ops``: the cap on the compares, and separately
#: on the operations (puts/deletes) of either branch, of one transaction.
MAX_TXN_OPS = 128

__all__ = [
    "KV", "MAX_TXN_OPS", "Compacted", "Compare", "Delete", "EtcdStore", "KVStore", "LeaseKV",
    "LeaseNotFound", "Op", "Put", "RangePage", "TxnResult", "Watch", "WatchBatch", "WatchEvent",
    "prefix_end",
]


def _kv(kv: Any) -> KV:
    return KV(kv.key, kv.value, kv.create_revision, kv.mod_revision)


_TARGETS = {"mod": rpc.Compare.MOD, "create": rpc.Compare.CREATE, "version": rpc.Compare.VERSION}
_FIELDS = {"mod": "mod_revision", "create": "create_revision", "version": "version"}


def _unavailable(err: grpc.RpcError) -> Unavailable | Compacted | LeaseNotFound:
    """etcd's error as drover's: the same errors :class:`MemoryKV` raises."""
    details = err.details() or ""  # type: ignore[attr-defined]
    if "required revision has been compacted" in details:
        return Compacted()  # the one "compacted" error, whatever the call
    if "requested lease not found" in details:
        return LeaseNotFound()
    return Unavailable(f"etcd: {err.code().name}: {details}")  # type: ignore[attr-defined]


class EtcdStore:
    """:class:`LeaseKV` on a connected :class:`drover.coord.EtcdClient` (its
    endpoint pool) or on one plain gRPC channel to etcd.

    ``timeout`` bounds a call when the caller set no deadline."""

    def __init__(self, etcd: Any, *, timeout: float = 10.0, max_txn_ops: int = MAX_TXN_OPS
                 ) -> None:
        #: etcd's ``--max-txn-ops`` as this service was told it (never discovered:
        #: etcd does not report it); a larger txn is refused here, not by etcd.
        self.max_txn_ops = max_txn_ops
        pool = getattr(etcd, "pool", None)
        if pool is None:  # one plain channel: a pool of one, not probed
            pool = EndpointPool([Endpoint("etcd", etcd)], label="store")
        self._pool: EndpointPool = pool
        self._timeout = timeout
        self.last_contact: float | None = None
        self._tracer = tracer("drover.state.etcd")
        m = meter("drover.state")
        self._txn_duration = m.create_histogram(
            "drover.state.etcd.txn.duration", unit="s",
            description="etcd transaction round trips of the state service, by outcome")
        self._compare_failures = m.create_counter(
            "drover.state.etcd.txn.compare_failures", unit="{txn}",
            description="etcd transactions whose compares failed (concurrent writer, lost fence)",
        )
        self._compare_failures.add(0)  # a series from the start: alerts see 0, not nothing

    async def range(
        self, key: bytes, range_end: bytes, *, limit: int = 0, revision: int = 0,
        count_only: bool = False,
    ) -> RangePage:
        req = rpc.RangeRequest(
            key=key, range_end=range_end, limit=limit, revision=revision, count_only=count_only
        )
        try:
            resp = await self._pool.unary("kv", "Range", req, timeout=self._timeout,
                                          idempotent=True, what="range")
        except grpc.RpcError as err:
            raise _unavailable(err) from err
        return RangePage([_kv(kv) for kv in resp.kvs], resp.more, resp.header.revision, resp.count)

    async def txn(self, compares: Sequence[Compare], ops: Sequence[Op]) -> TxnResult:
        if max(len(ops), len(compares)) > self.max_txn_ops:
            raise ValueError(f"a txn holds at most {self.max_txn_ops} operations "
                             f"(etcd's --max-txn-ops), not {max(len(ops), len(compares))}")
        # Built in place with add(): a delete page is ~256 sub-messages, and
        # constructing each then copying it into the request cost twice as much.
        req = rpc.TxnRequest()
        add_compare, add_op = req.compare.add, req.success.add
        for c in compares:
            m = add_compare(key=c.key, result=rpc.Compare.EQUAL, target=_TARGETS[c.target])
            setattr(m, _FIELDS[c.target], c.value)
        for op in ops:
            if isinstance(op, Put):
                put = add_op().request_put
                put.key, put.value = op.key, op.value
                if op.lease:
                    put.lease = op.lease
            else:
                add_op().request_delete_range.key = op.key
        start = time.perf_counter()
        outcome = "error"
        with self._tracer.start_as_current_span(
            "etcd Txn", kind=SpanKind.CLIENT,
            attributes={"db.system": "etcd", "db.operation": "Txn",
                        "drover.etcd.compares": len(compares), "drover.etcd.ops": len(ops)},
        ) as span:
            try:
                # never retried: OutcomeUnknown when it may have been applied
                resp = await self._pool.unary("kv", "Txn", req, timeout=self._timeout,
                                              idempotent=False, what="txn")
                outcome = "succeeded" if resp.succeeded else "compare_failed"
                span.set_attribute("drover.etcd.revision", resp.header.revision)
                span.set_attribute("drover.etcd.succeeded", resp.succeeded)
            except grpc.RpcError as err:
                raise _unavailable(err) from err
            finally:
                self._txn_duration.record(time.perf_counter() - start, {"outcome": outcome})
        if not resp.succeeded:
            self._compare_failures.add(1)
        return TxnResult(resp.succeeded, resp.header.revision)

    async def revision(self) -> int:
        # A linearizable read of one (probably absent) key: cheap, and its
        # header carries the current revision of the whole store.
        page = await self.range(b"\0", b"", count_only=True)
        return page.revision

    async def compact(self, revision: int) -> None:
        try:
            await self._pool.unary(
                "kv", "Compact", rpc.CompactionRequest(revision=revision, physical=True),
                timeout=self._timeout, idempotent=True, what="compact")
        except grpc.RpcError as err:
            raise _unavailable(err) from err

    async def lease_grant(self, ttl: int) -> int:
        try:
            resp = await self._pool.unary("lease", "LeaseGrant", rpc.LeaseGrantRequest(TTL=ttl),
                                          timeout=self._timeout, idempotent=True,
                                          what="lease grant")
        except grpc.RpcError as err:
            raise _unavailable(err) from err
        return int(resp.ID)

    async def lease_keepalive(self, lease: int) -> int:
        """One keepalive on a stream of its own (a session keeps one open)."""
        call = self._pool.open_stream("lease", "LeaseKeepAlive")
        try:
            await call.write(rpc.LeaseKeepAliveRequest(ID=lease))
            resp = await asyncio.wait_for(call.read(), self._timeout)
        except grpc.RpcError as err:
            raise _unavailable(err) from err
        finally:
            call.cancel()
        if resp is grpc.aio.EOF:
            raise Unavailable("etcd closed the keepalive stream")
        if resp.TTL <= 0:
            raise LeaseNotFound(lease)
        return int(resp.TTL)

    async def lease_revoke(self, lease: int) -> None:
        try:
            await self._pool.unary("lease", "LeaseRevoke", rpc.LeaseRevokeRequest(ID=lease),
                                   timeout=self._timeout, idempotent=True, what="lease revoke")
        except grpc.RpcError as err:
            raise _unavailable(err) from err

    async def watch(self, key: bytes, range_end: bytes, start_revision: int) -> Watch:
        w = _EtcdWatch(self._pool, key, range_end, start_revision)
        await w.start()
        return w


class _EtcdWatch:
    """One watch on its own stream, so a progress request speaks for it alone."""

    def __init__(self, pool: EndpointPool, key: bytes, range_end: bytes,
                 start_revision: int) -> None:
        self._requests: asyncio.Queue[Any] = asyncio.Queue()
        self._pool = pool
        create = rpc.WatchCreateRequest(
            key=key, range_end=range_end, start_revision=start_revision
        )
        self._requests.put_nowait(rpc.WatchRequest(create_request=create))
        self._call: Any = None
        self._closed = False

    async def _iter_requests(self) -> AsyncIterator[Any]:
        while True:
            req = await self._requests.get()
            if req is None:
                return
            yield req

    async def start(self) -> None:
        self._call = self._pool.open_stream("watch", "Watch", self._iter_requests())
        try:
            first = await self._call.read()
        except grpc.RpcError as err:
            raise _unavailable(err) from err
        if first is grpc.aio.EOF:
            raise Unavailable("etcd closed the watch stream")
        if first.compact_revision:
            await self.close()
            raise Compacted(first.compact_revision)
        if first.canceled:
            await self.close()
            raise Unavailable(f"etcd refused the watch: {first.cancel_reason}")

    def request_progress(self) -> None:
        if not self._closed:
            self._requests.put_nowait(
                rpc.WatchRequest(progress_request=rpc.WatchProgressRequest())
            )

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._requests.put_nowait(None)
        if self._call is not None:
            self._call.cancel()

    async def __aiter__(self) -> AsyncIterator[WatchBatch]:
        while True:
            try:
                resp = await self._call.read()
            except asyncio.CancelledError:
                raise
            except grpc.RpcError as err:
                if self._closed:
                    return
                raise _unavailable(err) from err
            if resp is grpc.aio.EOF:
                if self._closed:
                    return
                raise Unavailable("etcd closed the watch stream")
            if resp.compact_revision:
                with contextlib.suppress(Exception):
                    await self.close()
                raise Compacted(resp.compact_revision)
            if resp.canceled:
                raise Unavailable(f"etcd canceled the watch: {resp.cancel_reason}")
            events = [WatchEvent(_kv(ev.kv), ev.type == 1) for ev in resp.events]
            # With events, claim only their last revision: a catching-up watch
            # may send a header revision ahead of what it has sent so far. An
            # empty response is a progress notification, sent only when the
            # watch is synced, so its header revision is safe.
            rev = events[-1].kv.mod_revision if events else resp.header.revision
            yield WatchBatch(events, rev)
