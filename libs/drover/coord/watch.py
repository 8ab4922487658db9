"""A prefix watch that survives errors, compaction, slow consumers and a
frozen etcd.

What it guarantees to the consumer (e.g. the state service's watch-fed
cache): a sequence of :class:`Resync` (full state at R) and :class:`Batch`
(all events of one revision) messages with strictly increasing revisions,
where every event after a Resync at R is delivered exactly once, in order.

How:

* resume: after any stream error it re-watches from the last delivered
  revision + 1 (progress notifications advance that point too);
* compaction: when etcd answers that the resume revision is compacted, it
  re-lists the prefix at the current revision R (paged, all pages at R),
  emits ``Resync(R, items)`` and watches from R + 1;
* slow consumer: the buffer is bounded by events (:mod:`.watch_buffer`); when
  full, the etcd stream is cancelled and re-opened after the consumer
  drains, from the last buffered revision + 1;
* frozen etcd: aetcd's and gRPC's watch streams can hang silently (etcd
  SIGSTOPped keeps its sockets open). A liveness task does a linearizable
  count read every ``liveness_interval``; if it fails or takes longer than
  ``liveness_timeout``, :attr:`ResilientWatch.health` turns unhealthy (so
  the worst-case report delay is interval + timeout). When reads succeed
  again the stream is re-opened. The probe reads one key, never the range:
  etcd answers a count or a min_mod_revision filter over a prefix by
  reading every key in it, which for the state cache's whole keyspace
  would cost more than the watch itself.
* Events are converted and buffered per etcd response; the consumer takes
  everything buffered in one ``await get()``, never one await per event.

Open it on the typed KV of a *bulk* client (:func:`drover.coord.connect`,
:class:`~drover.coord.etcd_kv.EtcdKV`), not the one carrying session
keepalives; or on :class:`~drover.coord.memkv.MemoryKV` in tests.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol

from drover.coord.clock import Clock, monotonic
from drover.coord.deadline import caller_deadline
from drover.coord.errors import Compacted, EtcdUnavailable
from drover.coord.kv import Ranges, Watch, Watches, prefix_end
from drover.coord.latest import LatestChannel
from drover.coord.watch_buffer import (
    KeyValue,
    Resync,
    WatchBuffer,
    WatchMessage,
    batches_from_events,
    kv_from_kv,
)
from drover.tasks import cancel_and_wait

__all__ = ["ResilientWatch", "WatchConfig", "WatchHealth", "WatchKV"]


class WatchKV(Ranges, Watches, Protocol):
    """What a resilient watch needs: paged ranges (to resync) and watches."""

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WatchConfig:
    max_buffered_events: int = 10_000
    liveness_interval: float = 2.0
    liveness_timeout: float = 1.0
    retry_backoff: float = 0.2
    resync_page: int = 1000
    rpc_timeout: float = 10.0
    #: ``close`` waits this long for its cancelled tasks (``drover.tasks``).
    stop_timeout: float = 5.0


@dataclass(frozen=True)
class WatchHealth:
    healthy: bool
    since: float
    detail: str = ""


class ResilientWatch:
    """Watch every key under ``prefix``. ``start_revision=0``: begin with a
    Resync of the current state; else resume from that revision."""

    def __init__(self, kv: WatchKV, prefix: bytes, *, start_revision: int = 0,
                 config: WatchConfig | None = None, probe_kv: Ranges | None = None,
                 clock: Clock = monotonic) -> None:
        self.kv = kv
        self.prefix = prefix
        self.range_end = prefix_end(prefix)
        self.config = config or WatchConfig()
        self.probe_kv: Ranges = probe_kv or kv
        self.clock = clock
        self.health: LatestChannel[WatchHealth] = LatestChannel(WatchHealth(True, clock()))
        self.resyncs = 0
        self.restarts = 0
        self._buffer = WatchBuffer(self.config.max_buffered_events)
        self._next = start_revision  # next revision to watch from; 0: resync first
        self._ready = asyncio.Event()
        self._space = asyncio.Event()
        self._restart = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._error: BaseException | None = None
        self._call: Watch | None = None

    @property
    def healthy(self) -> bool:
        return self.health.value.healthy

    @property
    def next_revision(self) -> int:
        return self._next

    @property
    def buffered_events(self) -> int:
        return self._buffer.events

    @property
    def paused(self) -> bool:
        """The buffer is full: the etcd stream is closed until the consumer drains."""
        return self._buffer.full and self._call is None

    async def start(self) -> ResilientWatch:
        self._tasks = [asyncio.create_task(self._reader(), name="watch-reader"),
                       asyncio.create_task(self._liveness(), name="watch-liveness")]
        return self

    async def close(self) -> None:
        """Stop reading; bounded by ``config.stop_timeout``."""
        await cancel_and_wait(self._tasks, within=self.config.stop_timeout,
                              what=f"watch {self.prefix[:64]!r} close")
        self._tasks = []

    async def __aenter__(self) -> ResilientWatch:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def get(self, max_messages: int = 4096) -> list[WatchMessage]:
        """Everything buffered (at least one message), oldest first."""
        while not len(self._buffer):
            if self._error is not None:
                raise self._error
            self._ready.clear()
            await self._ready.wait()
        out = self._buffer.pop_many(max_messages)
        if not self._buffer.full:
            self._space.set()
        return out

    async def __aiter__(self) -> AsyncIterator[WatchMessage]:
        while True:
            for msg in await self.get():
                yield msg

    def _deliver(self, msg: WatchMessage) -> None:
        self._buffer.push(msg)
        self._next = msg.revision + 1
        self._ready.set()

    async def _resync(self, reason: str) -> None:
        cfg = self.config
        items: list[KeyValue] = []
        key, revision = self.prefix, 0
        while True:
            with caller_deadline(cfg.rpc_timeout):  # retried on another member within it
                page = await self.kv.range(key, self.range_end, limit=cfg.resync_page,
                                           revision=revision)
            revision = revision or page.revision
            items.extend(kv_from_kv(kv) for kv in page.kvs)
            if not page.more or not page.kvs:
                break
            key = page.kvs[-1].key + b"\0"
        self.resyncs += 1
        log.info("watch %r: resync at revision %d (%d keys): %s", self.prefix, revision,
                 len(items), reason)
        self._deliver(Resync(revision, tuple(items), reason))

    async def _reader(self) -> None:
        try:
            while True:
                if self._next == 0:
                    await self._resync("initial")
                while self._buffer.full:
                    self._space.clear()
                    await self._space.wait()
                try:
                    try:
                        await self._stream_once()
                    except Compacted as e:
                        # A resync that fails (or meets a compaction at its
                        # own revision) is retried like a stream error.
                        await self._resync(f"revision {self._next} compacted "
                                           f"(compact revision {e.compact_revision})")
                except (EtcdUnavailable, Compacted) as e:
                    log.info("watch %r: stream error, resuming from %d: %r", self.prefix,
                             self._next, e)
                    await asyncio.sleep(self.config.retry_backoff)
        except asyncio.CancelledError:
            raise
        except BaseException as e:
            self._error = e
            self._ready.set()
            raise

    async def _stream_once(self) -> None:
        self._restart.clear()
        with caller_deadline(self.config.rpc_timeout):
            call = await self.kv.watch(self.prefix, self.range_end, self._next,
                                       progress_notify=True)
        self._call = call
        self.restarts += 1
        try:
            async for batch in call:
                if batch.events:
                    for msg in batches_from_events(batch.events):
                        if msg.revision >= self._next:
                            self._deliver(msg)
                elif batch.revision >= self._next:
                    # Progress notification: nothing under the prefix up to it.
                    self._next = batch.revision + 1
                if self._buffer.full:
                    return  # pause: resume from self._next after the consumer drains
                if self._restart.is_set():
                    return
        except asyncio.CancelledError:
            # The liveness task cancels the call to re-open a stuck stream;
            # only a cancellation of this task itself must propagate.
            task = asyncio.current_task()
            if not self._restart.is_set() or (task is not None and task.cancelling()):
                raise
        finally:
            self._call = None
            await call.close()

    def _set_health(self, healthy: bool, detail: str) -> None:
        if self.health.value.healthy != healthy:
            (log.info if healthy else log.warning)(
                "watch %r: etcd %s", self.prefix, "live again" if healthy else detail)
            self.health.publish(WatchHealth(healthy, self.clock(), detail))

    async def _liveness(self) -> None:
        cfg = self.config
        while True:
            await asyncio.sleep(cfg.liveness_interval)
            try:
                with caller_deadline(cfg.liveness_timeout):
                    async with asyncio.timeout(cfg.liveness_timeout):
                        await self.probe_kv.range(self.prefix, b"", count_only=True)
            except (TimeoutError, EtcdUnavailable) as e:
                self._set_health(False, f"unresponsive: linearizable read failed: {e!r}")
                if self._call is not None:
                    self._call.suspect()  # the pool probes the stream's member now
                continue
            if not self.healthy:
                self._set_health(True, "")
                await self._kick_stream()

    async def _kick_stream(self) -> None:
        self._restart.set()
        if self._call is not None:
            await self._call.close()  # ends its read: the reader re-opens from self._next
