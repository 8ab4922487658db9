"""The one etcd layer: :class:`EtcdKV`, the typed KV of :mod:`drover.coord.kv`
on a real etcd. The only code (with :mod:`.pool`, :mod:`.connect` and
:mod:`.endpoints` under it) that builds etcd requests.

It speaks the raw etcd v3 stubs through the health-checked endpoint pool
of a :class:`drover.coord.EtcdClient` (or, for tests and benches, one plain
channel): aetcd's own range has no ``limit``/``revision`` and its watcher
splits responses into single events, losing the revision boundaries and
the progress notifications a watch-fed cache needs to prove it is current.
Through the pool:

* reads retry on another etcd member within their bound;
* a txn whose answer is lost raises
  :class:`~drover.coord.errors.EtcdOutcomeUnknown` (never retried);
* watches and keepalive streams carry etcd's require-leader metadata
  (``hasleader``) and end when their member turns bad;
* one-shot lease keepalives (:meth:`EtcdKV.lease_keepalive`, a node's
  heartbeat) share one LeaseKeepAlive stream per KV
  (:mod:`drover.coord.keepalive_mux`); a session renews on a stream of its
  own (:meth:`EtcdKV.keepalives`);
* every call ends by the gRPC caller's deadline (:mod:`drover.coord.deadline`).

One error set, the same :class:`~drover.coord.memkv.MemoryKV` raises:
:class:`Compacted`, :class:`LeaseNotFound`, :class:`ClientClosed` and
otherwise :class:`EtcdUnavailable` (and :class:`EtcdOutcomeUnknown` from txns).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import grpc
from aetcd import rpc
from opentelemetry.trace import SpanKind

from drover.coord.connect import EtcdClient
from drover.coord.deadline import bounded
from drover.coord.errors import ClientClosed, EtcdUnavailable
from drover.coord.keepalive_mux import KeepAliveMux
from drover.coord.kv import (
    KV,
    MAX_TXN_OPS,
    Compacted,
    Compare,
    LeaseNotFound,
    Op,
    Put,
    RangePage,
    RangeSummary,
    TxnResult,
    WatchBatch,
    WatchEvent,
)
from drover.coord.pool import Endpoint, EndpointPool, Stream
from drover.telemetry import meter, tracer

__all__ = ["EtcdKV"]


_tuple = tuple.__new__


def _kv(kv: Any) -> KV:
    return KV(kv.key, kv.value, kv.create_revision, kv.mod_revision)


_TARGETS = {"mod": rpc.Compare.MOD, "create": rpc.Compare.CREATE,
            "version": rpc.Compare.VERSION, "lease": rpc.Compare.LEASE}
_MOD = rpc.Compare.MOD
assert rpc.Compare.EQUAL == 0  # the compare result every txn here asks for
_FIELDS = {"mod": "mod_revision", "create": "create_revision", "version": "version",
           "lease": "lease"}


def txn_request(compares: Sequence[Compare], ops: Sequence[Op]) -> Any:
    """The etcd TxnRequest of ``compares`` (each ``target == value``) and
    ``ops`` (all applied when every compare holds; no else branch)."""
    # Built in place with add(): a delete page is ~256 sub-messages, and
    # constructing each then copying it into the request cost twice as much.
    req = rpc.TxnRequest()
    add_compare, add_op = req.compare.add, req.success.add
    # result EQUAL is the enum's 0 (the default): not set. The usual target,
    # "mod", is made in one call (a compare per written object).
    for key, target, value in compares:
        if target == "mod":
            add_compare(key=key, target=_MOD, mod_revision=value)
        else:
            setattr(add_compare(key=key, target=_TARGETS[target]), _FIELDS[target], value)
    for op in ops:
        if isinstance(op, Put):
            put = add_op().request_put
            put.key, put.value = op.key, op.value
            if op.lease:
                put.lease = op.lease
        else:
            add_op().request_delete_range.key = op.key
    return req


def _error(err: BaseException) -> EtcdUnavailable | Compacted | LeaseNotFound:
    """etcd's error as the layer's: the same errors :class:`MemoryKV` raises."""
    if not isinstance(err, grpc.RpcError):
        return EtcdUnavailable(f"etcd: {err!r}")
    details = err.details() or ""  # type: ignore[attr-defined]
    if "required revision has been compacted" in details:
        return Compacted()  # the one "compacted" error, whatever the call
    if "requested lease not found" in details:
        return LeaseNotFound()
    return EtcdUnavailable(f"etcd: {err.code().name}: {details}")  # type: ignore[attr-defined]


class _Telemetry:
    """Txn spans and metrics under one name (the state service: "drover.state")."""

    def __init__(self, name: str) -> None:
        self.tracer = tracer(f"{name}.etcd")
        m = meter(name)
        self.txn_duration = m.create_histogram(
            f"{name}.etcd.txn.duration", unit="s",
            description=f"etcd transaction round trips of {name}, by outcome")
        self.compare_failures = m.create_counter(
            f"{name}.etcd.txn.compare_failures", unit="{txn}",
            description="etcd transactions whose compares failed (concurrent writer, lost fence)",
        )
        self.compare_failures.add(0)  # a series from the start: alerts see 0, not nothing


class EtcdKV:
    """:class:`~drover.coord.kv.LeaseKV` on an :class:`EtcdClient` (its
    endpoint pool, looked up at each call: a closed client raises
    :class:`ClientClosed`) or on one plain gRPC channel to etcd.

    ``timeout`` bounds a call (clipped to the caller's deadline:
    :func:`drover.coord.deadline.caller_deadline` shortens it);
    ``write_timeout`` (None: ``timeout``) bounds a txn the same way.
    A write through an etcd member that lost its leader is answered only
    after etcd's request timeout (5 s + 2 election timeouts: 7 s by
    default), "request timed out"; a shorter ``write_timeout`` ends it
    sooner, ``EtcdOutcomeUnknown``, and the member is left (marked bad) for the
    next call. ``telemetry`` names the spans and metrics of its txns (none
    when empty)."""

    def __init__(self, etcd: EtcdClient | grpc.aio.Channel, *, timeout: float = 10.0,
                 max_txn_ops: int = MAX_TXN_OPS, telemetry: str = "",
                 write_timeout: float | None = None) -> None:
        if write_timeout is not None and write_timeout <= 0:
            raise ValueError(f"write_timeout must be positive, got {write_timeout}")
        #: etcd's ``--max-txn-ops`` as this process was told it (never discovered:
        #: etcd does not report it); a larger txn is refused here, not by etcd.
        self.max_txn_ops = max_txn_ops
        self._client: EtcdClient | None = None
        self._fixed: EndpointPool | None = None
        if isinstance(etcd, EtcdClient):
            self._client = etcd
        else:  # one plain channel: a pool of one, not probed
            self._fixed = EndpointPool([Endpoint("etcd", etcd)], label="kv")
        self._timeout = timeout
        self._write_timeout = timeout if write_timeout is None else min(timeout, write_timeout)
        self._telemetry = _Telemetry(telemetry) if telemetry else None
        self._keepalives = KeepAliveMux(self._keepalive_stream, timeout=timeout)

    async def close(self) -> None:
        """End the shared keepalive stream: keepalives waiting on it raise
        :class:`ClientClosed`, and so do later ones. The client (or channel)
        is its owner's to close."""
        await self._keepalives.close()

    @property
    def client(self) -> EtcdClient | None:
        """The client this KV runs on (None on a plain channel)."""
        return self._client

    @property
    def _pool(self) -> EndpointPool:
        if self._fixed is not None:
            return self._fixed
        assert self._client is not None
        pool = self._client.pool
        if pool is None:
            raise ClientClosed("the etcd client was closed")
        return pool

    @property
    def suspect_after(self) -> float:
        """Seconds a keepalive may go unanswered before its member is suspect."""
        if self._fixed is not None:
            return math.inf  # one channel: nowhere else to go
        pool = self._client.pool if self._client is not None else None
        return pool.config.request_bound if pool is not None else math.inf

    async def _unary(self, kind: str, method: str, req: Any, *, idempotent: bool,
                     what: str) -> Any:
        # A write's own bound is shorter: past it the member is left (see above).
        write = what == "txn"
        try:
            return await self._pool.unary(
                kind, method, req, timeout=self._write_timeout if write else self._timeout,
                idempotent=idempotent, what=what, leave_on_timeout=write)
        except grpc.RpcError as err:
            raise _error(err) from err

    # ---- KV

    async def range(
        self, key: bytes, range_end: bytes, *, limit: int = 0, revision: int = 0,
        count_only: bool = False,
    ) -> RangePage:
        req = rpc.RangeRequest(
            key=key, range_end=range_end, limit=limit, revision=revision, count_only=count_only
        )
        resp = await self._unary("kv", "Range", req, idempotent=True, what="range")
        return RangePage([_kv(kv) for kv in resp.kvs], resp.more, resp.header.revision, resp.count)

    async def newest(self, key: bytes, range_end: bytes) -> KV | None:
        req = rpc.RangeRequest(key=key, range_end=range_end, limit=1, keys_only=True,
                               sort_order=rpc.RangeRequest.DESCEND,
                               sort_target=rpc.RangeRequest.MOD)
        resp = await self._unary("kv", "Range", req, idempotent=True, what="range")
        return _kv(resp.kvs[0]) if resp.kvs else None

    async def summary(self, key: bytes, range_end: bytes) -> RangeSummary:
        req = rpc.RangeRequest(key=key, range_end=range_end, limit=1, keys_only=True,
                               sort_order=rpc.RangeRequest.DESCEND,
                               sort_target=rpc.RangeRequest.MOD)
        resp = await self._unary("kv", "Range", req, idempotent=True, what="range")
        newest = resp.kvs[0].mod_revision if resp.kvs else 0
        return RangeSummary(resp.header.revision, resp.count, newest)

    async def txn(self, compares: Sequence[Compare], ops: Sequence[Op]) -> TxnResult:
        if max(len(ops), len(compares)) > self.max_txn_ops:
            raise ValueError(f"a txn holds at most {self.max_txn_ops} operations "
                             f"(etcd's --max-txn-ops), not {max(len(ops), len(compares))}")
        req = txn_request(compares, ops)
        # never retried: EtcdOutcomeUnknown when it may have been applied
        t = self._telemetry
        if t is None:
            resp = await self._unary("kv", "Txn", req, idempotent=False, what="txn")
            return TxnResult(resp.succeeded, resp.header.revision)
        start = time.perf_counter()
        outcome = "error"
        with t.tracer.start_as_current_span(
            "etcd Txn", kind=SpanKind.CLIENT,
            attributes={"db.system": "etcd", "db.operation": "Txn",
                        "drover.etcd.compares": len(compares), "drover.etcd.ops": len(ops)},
        ) as span:
            try:
                resp = await self._unary("kv", "Txn", req, idempotent=False, what="txn")
                outcome = "succeeded" if resp.succeeded else "compare_failed"
                span.set_attribute("drover.etcd.revision", resp.header.revision)
                span.set_attribute("drover.etcd.succeeded", resp.succeeded)
            finally:
                t.txn_duration.record(time.perf_counter() - start, {"outcome": outcome})
        if not resp.succeeded:
            t.compare_failures.add(1)
        return TxnResult(resp.succeeded, resp.header.revision)

    async def revision(self) -> int:
        # A linearizable read of one (probably absent) key: cheap, and its
        # header carries the current revision of the whole store.
        page = await self.range(b"\0", b"", count_only=True)
        return page.revision

    async def compact(self, revision: int) -> None:
        await self._unary("kv", "Compact", rpc.CompactionRequest(revision=revision, physical=True),
                          idempotent=True, what="compact")

    # ---- leases

    async def lease_grant(self, ttl: int) -> int:
        # retried on another member: an orphaned lease just expires
        resp = await self._unary("lease", "LeaseGrant", rpc.LeaseGrantRequest(TTL=ttl),
                                 idempotent=True, what="lease grant")
        return int(resp.ID)

    async def lease_keepalive(self, lease: int) -> int:
        """One keepalive, on the stream this KV shares between all of them
        (:mod:`drover.coord.keepalive_mux`), within the KV's timeout clipped
        to the caller's deadline. A session keeps a stream of its own:
        :meth:`keepalives`."""
        return await self._keepalives.keepalive(lease, bounded(self._timeout))

    def _keepalive_stream(self) -> _SharedKeepAlives:
        return _SharedKeepAlives(self._pool, self.suspect_after)

    async def lease_revoke(self, lease: int) -> None:
        await self._unary("lease", "LeaseRevoke", rpc.LeaseRevokeRequest(ID=lease),
                          idempotent=True, what="lease revoke")

    def keepalives(self, lease: int) -> _EtcdKeepAlives:
        """A LeaseKeepAlive stream for ``lease`` (require-leader)."""
        return _EtcdKeepAlives(self._pool.open_stream("lease", "LeaseKeepAlive"), lease)

    # ---- watches

    async def watch(self, key: bytes, range_end: bytes, start_revision: int, *,
                    progress_notify: bool = False) -> _EtcdWatch:
        w = _EtcdWatch(self._pool, key, range_end, start_revision, progress_notify)
        await w.start(self._timeout)
        return w


class _EtcdKeepAlives:
    """Keepalive requests of one lease on one stream; replies are TTLs in order."""

    def __init__(self, stream: Stream, lease: int) -> None:
        self._stream = stream
        self._lease = lease

    async def send(self) -> None:
        try:
            await self._stream.write(rpc.LeaseKeepAliveRequest(ID=self._lease))
        except (grpc.RpcError, asyncio.InvalidStateError) as err:
            raise _error(err) from err

    async def __aiter__(self) -> AsyncIterator[int]:
        try:
            async for reply in self._stream:
                yield int(reply.TTL)
        except (grpc.RpcError, asyncio.InvalidStateError) as err:
            raise _error(err) from err

    def suspect(self) -> None:
        self._stream.suspect()

    def cancel(self) -> None:
        self._stream.cancel()


class _SharedKeepAlives:
    """The LeaseKeepAlive stream of :class:`KeepAliveMux` (require-leader):
    requests of any lease, written in the order queued by gRPC's own task."""

    def __init__(self, pool: EndpointPool, suspect_after: float) -> None:
        self.suspect_after = suspect_after
        self._requests: asyncio.Queue[Any] = asyncio.Queue()
        self._stream = pool.open_stream("lease", "LeaseKeepAlive", self._iter_requests())

    def _iter_requests(self) -> AsyncIterator[Any]:
        return _queued(self._requests)

    def send(self, lease: int) -> None:
        if self._stream.done():
            raise EtcdUnavailable("the lease keepalive stream has ended")
        self._requests.put_nowait(rpc.LeaseKeepAliveRequest(ID=lease))

    async def recv(self) -> tuple[int, int] | None:
        try:
            reply = await self._stream.read()
        except grpc.RpcError as err:
            raise _error(err) from err
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise
            # the call itself was cancelled (its channel closed), not the reader
            raise EtcdUnavailable("the lease keepalive stream was cancelled") from None
        if reply is grpc.aio.EOF:
            return None
        return int(reply.ID), int(reply.TTL)

    def suspect(self) -> None:
        self._stream.suspect()

    def cancel(self) -> None:
        self._requests.put_nowait(None)
        self._stream.cancel()


class _EtcdWatch:
    """One watch on its own stream, so a progress request speaks for it alone."""

    def __init__(self, pool: EndpointPool, key: bytes, range_end: bytes,
                 start_revision: int, progress_notify: bool) -> None:
        self._requests: asyncio.Queue[Any] = asyncio.Queue()
        self._pool = pool
        create = rpc.WatchCreateRequest(
            key=key, range_end=range_end, start_revision=start_revision,
            progress_notify=progress_notify,
        )
        self._requests.put_nowait(rpc.WatchRequest(create_request=create))
        self._call: Stream | None = None
        self._closed = False
        self._applied: Callable[[], int] | None = None

    def _iter_requests(self) -> AsyncIterator[Any]:
        return _queued(self._requests)

    async def start(self, within: float) -> None:
        """Open the stream and wait for etcd's answer (created, compacted or
        refused), at most ``within`` seconds (clipped to the caller's deadline)."""
        self._call = self._pool.open_stream("watch", "Watch", self._iter_requests())
        try:
            async with asyncio.timeout(bounded(within)):
                first = await self._call.read()
        except grpc.RpcError as err:
            await self.close()
            raise _error(err) from err
        except TimeoutError as err:
            await self.close()
            raise EtcdUnavailable(f"etcd did not create a watch within {within:g}s") from err
        except BaseException:
            await self.close()
            raise
        if first is grpc.aio.EOF:
            await self.close()
            raise EtcdUnavailable("etcd closed the watch stream")
        if first.compact_revision:
            await self.close()
            raise Compacted(first.compact_revision)
        if first.canceled:
            await self.close()
            raise EtcdUnavailable(f"etcd refused the watch: {first.cancel_reason}")

    def request_progress(self) -> None:
        if not self._closed:
            self._requests.put_nowait(
                rpc.WatchRequest(progress_request=rpc.WatchProgressRequest())
            )

    def skip_applied(self, applied: Callable[[], int]) -> None:
        self._applied = applied

    def suspect(self) -> None:
        if self._call is not None:
            self._call.suspect()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._requests.put_nowait(None)
        if self._call is not None:
            self._call.cancel()

    async def __aiter__(self) -> AsyncIterator[WatchBatch]:
        assert self._call is not None, "start() first"
        while True:
            try:
                resp = await self._call.read()
            except asyncio.CancelledError:
                raise
            except grpc.RpcError as err:
                if self._closed:
                    return
                raise _error(err) from err
            if resp is grpc.aio.EOF:
                if self._closed:
                    return
                raise EtcdUnavailable("etcd closed the watch stream")
            if resp.compact_revision:
                with contextlib.suppress(Exception):
                    await self.close()
                raise Compacted(resp.compact_revision)
            if resp.canceled:
                raise EtcdUnavailable(f"etcd canceled the watch: {resp.cancel_reason}")
            got = resp.events
            if got and self._applied is not None:
                # The consumer has these already (skip_applied): a txn's
                # events come in one response, so one look skips them all.
                top, last = self._applied(), got[-1].kv.mod_revision
                if last <= top:
                    yield WatchBatch([], last)
                    continue
                if got[0].kv.mod_revision <= top:
                    got = [ev for ev in got if ev.kv.mod_revision > top]
            # Built with tuple.__new__ (what the NamedTuples' own __new__
            # does, minus a Python call each): one KV and one event per
            # change of every watch, the state cache's included.
            events = [_tuple(WatchEvent, (_tuple(KV, (kv.key, kv.value, kv.create_revision,
                                                       kv.mod_revision)), ev.type == 1))
                      for ev in got for kv in (ev.kv,)]
            # With events, claim only their last revision: a catching-up watch
            # may send a header revision ahead of what it has sent so far. An
            # empty response is a progress notification, sent only when the
            # watch is synced, so its header revision is safe.
            rev = events[-1].kv.mod_revision if events else resp.header.revision
            yield WatchBatch(events, rev)


async def _queued(requests: asyncio.Queue[Any]) -> AsyncIterator[Any]:
    """A stream's requests as queued, until a None ends them."""
    while True:
        req = await requests.get()
        if req is None:
            return
        yield req
