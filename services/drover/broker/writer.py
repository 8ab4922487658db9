"""The leader's fenced writes to the state store, group-committed.

One :class:`FencedWriter` per leadership term. Everything the leader writes
goes through it with the term's fence: worker outcomes (Ack) and the core's
effects (cancellations, failures and their follow-ups, unblocks).

Group commit: concurrent writes are merged into one ``UpdateEvaluations``
call (one etcd txn) of at most ``max_objects`` evaluations, so sixteen
workers acking at once cost one round trip, not sixteen. Outcomes are
*updates* compared on the ``modify_index`` the broker held and follow-ups
are *creates* (:class:`~drover.broker.core.effects.WriteGroup`): nothing the
broker writes can re-create an evaluation deleted meanwhile. An evaluation
written twice in one batch keeps its last body (etcd refuses duplicate
keys in a txn). A batch the store refuses (a worker's malformed follow-up,
an evaluation deleted or changed meanwhile) is retried group by group, so
one bad group fails alone; a batch whose outcome is unknown is not (each
write's caller learns that it may have landed). Writes under different
fences (an Ack is fenced with the term its delivery token carries) never
share a txn.

Leader only: before every call to the store the writer asks ``alive`` (the
term's lease clock, :class:`~drover.coord.guard.LeaderGuard`); a term that
is not provably alive writes nothing and ends like a lost fence.

Guarantees: a caller of :meth:`write` learns the outcome of its own write
(the store index, or the error). Effects have no caller: they are retried
with backoff while the term lasts (each is idempotent against the store)
and dropped only when the store refuses them as invalid, or because the
evaluation was deleted or changed meanwhile (the event stream then brings
the broker the newer state, from which it decides again). ``FENCE_LOST``
ends the term at once (``on_fence_lost``): no later write of this term can
succeed anyway, and the next leader re-derives every effect from the store.

Overlapped flushes: up to ``max_in_flight`` batches (default 2) are in
flight at once, so the next batch is sent while the previous one's txn
and reply are under way (a worker's AckBatch of 128 fills a 127-object
txn and starts the next: serially, every second round trip waited on the
first). Batches in flight never share an evaluation id (an update or a
create): a write that touches one still in flight waits for it, and
whatever queued behind it waits too, so per evaluation the writes reach
the store in the order they were made, and each is still compared on the
``modify_index`` it was built on (never re-created if deleted, never
overwriting a change it did not see). Different ids have no order among
them in the store: none is implied by the broker (each outcome is its
own update). ``FENCE_LOST`` from any flush ends the term once; the other
flight's callers learn it (their write may or may not have landed: an
outcome unknown, as for any lost reply; at-least-once).

Tracing: each write remembers the trace context it was made in; a batch's
``broker write`` span is the child of its first write's context and links
the others (each context once: an AckBatch's writes share one), so an Ack's
trace goes on to the state service's txn. ``on_written`` is called once per
landed txn, with every group it wrote.

Split: which queued writes form the next txn is the pure batching policy
(:mod:`.core.write_batch`); a queued write and where its outcome goes is
:mod:`.pending_write`; this module is the async shell: queueing, the flight
loop, retries and the fence.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Sequence
from typing import Protocol

from opentelemetry import context as otel_context
from opentelemetry import trace

from drover.api.types.v1.evaluation_pb2 import Evaluation
from drover.broker.core.effects import WriteGroup
from drover.broker.core.write_batch import merge_writes, next_batch, smaller_cap
from drover.broker.errors import WriteOutcomeUnknown
from drover.broker.pending_write import Outcomes, PendingWrite, trace_links
from drover.coord.fence import Fence
from drover.coord.kv import MAX_TXN_OPS, objects_per_txn
from drover.errors import (
    AlreadyExists,
    Conflict,
    DroverError,
    FailedPrecondition,
    FenceLost,
    InvalidArgument,
    NotFound,
    NotLeader,
)

__all__ = ["FencedWriter", "UpdateApi"]

_NONE: tuple[list[PendingWrite], list[str]] = ([], [])

log = logging.getLogger(__name__)
_tracer = trace.get_tracer("drover.broker.writer")

#: At etcd's default operations per txn (the runtime passes
#: ``--broker-max-txn-ops``'s own).
MAX_OBJECTS = objects_per_txn(MAX_TXN_OPS)


class UpdateApi(Protocol):
    """The one call the writer makes (a slice of BrokerStateApi)."""

    async def update(self, updates: Sequence[Evaluation], creates: Sequence[Evaluation],
                     fence: Fence) -> int: ...


# What an effect write may be refused for without a retry ever helping:
# invalid, deleted or changed meanwhile, or created already.
_FINAL = (InvalidArgument, NotFound, AlreadyExists, FailedPrecondition)
# What the store answers of a txn it refused whole, having written none of
# it: a batch refused so is tried again group by group. Anything else (the
# state service or etcd unavailable, a reply lost) may have landed.
_REFUSED = (*_FINAL, Conflict)


class FencedWriter:
    def __init__(
        self,
        api: UpdateApi,
        fence: Fence,
        *,
        on_written: Callable[[Sequence[WriteGroup], int], None],
        on_fence_lost: Callable[[str], None],
        alive: Callable[[], bool] = lambda: True,
        max_objects: int = MAX_OBJECTS,
        retry_backoff: float = 0.5,
        max_in_flight: int = 2,
    ) -> None:
        self._api = api
        self._fence = fence
        self._alive = alive
        self._on_written = on_written
        self._on_fence_lost = on_fence_lost
        self._max = max_objects
        self._backoff = retry_backoff
        self._max_in_flight = max(1, max_in_flight)
        self._queue: deque[PendingWrite] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake = asyncio.Event()
        self._closed: DroverError | None = None
        self._retry: list[PendingWrite] = []
        # The batches being written: a cancelled writer (the term ended) must
        # still answer their callers.
        self._inflight: list[list[PendingWrite]] = []
        # The evaluation ids those batches write (see "Overlapped flushes").
        self._busy: dict[str, int] = {}
        self._retry_handle: asyncio.TimerHandle | None = None

    def submit(self, groups: Sequence[WriteGroup]) -> None:
        """Queue effect writes (fire and forget; retried while the term lasts)."""
        if self._closed is not None or not groups:
            return
        self._queue.extend(PendingWrite(g) for g in groups if g.size)
        self._wake.set()

    async def write(self, group: WriteGroup, fence: Fence | None = None) -> int:
        """Write ``group`` in one txn (merged with others); the store index.

        ``fence`` overrides the term's (an Ack is fenced with its token's term).
        """
        return await self.enqueue(group, fence)

    def enqueue(self, group: WriteGroup, fence: Fence | None = None) -> asyncio.Future[int]:
        """:meth:`write` without the wait: the future of the store index."""
        self._check(group)
        done: asyncio.Future[int] = self._running_loop().create_future()
        self._queue.append(PendingWrite(group, done, None if fence == self._fence else fence))
        self._wake.set()
        return done

    def enqueue_all(
        self, writes: Sequence[tuple[WriteGroup, Fence | None]],
    ) -> asyncio.Future[list[int | DroverError]]:
        """Queue many writes at one moment (an AckBatch); one future of
        every write's store index or error, in order, once all are answered.

        Each write is still its own: merged into txns with others, and
        failing alone (a refused batch is retried group by group). Raises
        at once, queuing nothing, if the writer is closed or a group is too
        big.
        """
        for group, _ in writes:
            self._check(group)
        done: asyncio.Future[list[int | DroverError]] = self._running_loop().create_future()
        if not writes:
            done.set_result([])
            return done
        sink = Outcomes(done, len(writes))
        context = otel_context.get_current()
        term_fence = self._fence
        self._queue.extend(
            PendingWrite(group, sink, None if fence is None or fence == term_fence else fence,
                     context, slot)
            for slot, (group, fence) in enumerate(writes))
        self._wake.set()
        return done

    def _check(self, group: WriteGroup) -> None:
        if self._closed is not None:
            raise self._closed
        if group.size > self._max:
            raise InvalidArgument(
                f"an ack writes at most {self._max} evaluations (itself and "
                f"{self._max - 1} follow-ups), got {group.size}",
                metadata={"field": "follow_ups"},
            )

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        # Looked up once: asyncio.get_running_loop() is a getpid() syscall
        # each time, and an AckBatch used to make one per ack.
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        return loop

    def close(self, err: DroverError) -> None:
        """End the term's writes: callers of queued writes get ``err``; of
        writes in flight, an unknown outcome (sent: they may land yet);
        effects are dropped."""
        self._closed = err
        unknown = WriteOutcomeUnknown(
            f"the broker's term ended while the write was in flight ({err.message}); "
            "it may or may not have been applied")
        for batch in self._inflight:
            for item in batch:
                item.resolve(unknown)
        for item in self._queue:
            item.resolve(err)
        self._inflight = []
        self._busy.clear()
        self._queue.clear()
        self._retry.clear()
        if self._retry_handle is not None:
            self._retry_handle.cancel()
            self._retry_handle = None
        self._wake.set()

    async def run(self) -> None:
        """Flush until closed (spawned in the term's task group), up to
        ``max_in_flight`` batches at once."""
        flights: set[asyncio.Task[None]] = set()
        try:
            while self._closed is None:
                self._wake.clear()
                batch, ids = self._take() if len(flights) < self._max_in_flight else _NONE
                if batch:
                    # Marked in flight now, not when the task first runs:
                    # the next _take must already see its ids.
                    self._start(batch, ids)
                    flights.add(asyncio.ensure_future(self._flight(batch, ids)))
                    continue
                # Nothing to start: wait for a write, or for a flight to land
                # (which frees a slot, or the ids the queue's head waits on).
                woken = asyncio.ensure_future(self._wake.wait())
                try:
                    done, _ = await asyncio.wait({woken, *flights},
                                                 return_when=asyncio.FIRST_COMPLETED)
                finally:
                    woken.cancel()
                for task in done & flights:
                    flights.discard(task)
                    task.result()  # a bug in a flush ends the writer, loudly
        finally:
            for task in flights:
                task.cancel()
            if self._closed is None:
                self.close(NotLeader("broker", None))

    def _start(self, batch: list[PendingWrite], ids: list[str]) -> list[str]:
        self._inflight.append(batch)
        busy = self._busy
        for i in ids:
            busy[i] = busy.get(i, 0) + 1
        return ids

    async def _flight(self, batch: list[PendingWrite], ids: list[str]) -> None:
        try:
            await self._flush(batch)
        finally:
            mine = [b for b in self._inflight if b is batch]
            if mine:  # else close() emptied the lists
                self._inflight = [b for b in self._inflight if b is not batch]
                for i in ids:
                    left = self._busy.pop(i, 1) - 1
                    if left:
                        self._busy[i] = left

    def _take(self) -> tuple[list[PendingWrite], list[str]]:
        """The next batch and the evaluation ids it writes (:mod:`.core.write_batch`)."""
        return next_batch(self._queue, self._busy, self._max)

    async def _flush(self, batch: list[PendingWrite]) -> None:
        if self._closed is not None:
            # Ended while this batch waited (another flight lost the fence):
            # close() answered its callers; nothing more is written.
            return
        links = trace_links(batch)
        try:
            with _tracer.start_as_current_span(
                "broker write", context=batch[0].context, links=links,
                attributes={"drover.broker.write_groups": len(batch)},
            ):
                index = await self._update(batch)
        except FenceLost as err:
            if batch[0].fence is not None and self._alive():
                # An older term's fence (a delivery token of a past term):
                # that write is refused; this term stands.
                for item in batch:
                    self._failed(item, err)
                return
            for item in batch:  # refused inside etcd: nothing of it was written
                item.resolve(NotLeader("broker", None))
            self._lost(err)
            return
        except DroverError as err:
            cap = smaller_cap(err, self._max)
            if cap is not None:
                # A state replica told a smaller --max-txn-ops than this
                # broker: its cap from now on; the batch goes back, in
                # order and ahead of the rest, to be cut again.
                log.warning("broker: the state service takes at most %d evaluations per "
                            "write (not %d): writing smaller txns; set --broker-max-txn-ops "
                            "to the state's --state-max-txn-ops", cap, self._max)
                self._max = cap
                self._queue.extendleft(reversed(batch))
                self._wake.set()
                return
            if len(batch) > 1 and isinstance(err, _REFUSED):
                # Refused whole, nothing written; one group may be at
                # fault: try each alone.
                for item in batch:
                    await self._flush([item])
                return
            # One write refused, or a batch whose outcome is unknown (the
            # reply was lost: it may have landed). Never written again
            # here for a caller: compared on the modify_index it was built
            # on, a second attempt of a write that landed is refused
            # EVALUATION_CHANGED, and an Ack would be told "not written"
            # of an outcome that is durable. Effects are retried (each is
            # idempotent against the store).
            for item in batch:
                self._failed(item, err)
            return
        self._succeeded(batch, index)

    async def _update(self, batch: list[PendingWrite]) -> int:
        updates, creates = merge_writes(batch)
        # The last synchronous moment before the write leaves: leader only.
        if not self._alive():
            raise FenceLost("the term's lease clock ran out before the write")
        fence = batch[0].fence or self._fence
        return await self._api.update(updates, creates, fence)

    def _succeeded(self, batch: list[PendingWrite], index: int) -> None:
        try:
            self._on_written([item.group for item in batch], index)
        except Exception:
            log.exception("broker: after-write hook failed")
        for item in batch:
            item.resolve(index)

    def _failed(self, item: PendingWrite, err: DroverError) -> None:
        if item.awaited:
            item.resolve(err if isinstance(err, _REFUSED) else WriteOutcomeUnknown(
                f"the state service did not answer the write ({err.message}); "
                "it may or may not have been applied", metadata=err.metadata))
            return
        if isinstance(err, InvalidArgument):
            log.error("broker: the state store refused an effect write, dropping it: %s", err)
            return
        if isinstance(err, _FINAL):
            # Deleted, changed or created meanwhile: the event stream brings
            # the broker what is there now, and it decides again from that.
            log.info("broker: effect write not applied (%s), dropping it: %s", err.reason, err)
            return
        item.attempts += 1
        level = logging.WARNING if item.attempts in (1, 10, 100) else logging.DEBUG
        log.log(level, "broker: effect write failed (attempt %d), retrying: %s",
                item.attempts, err)
        self._retry.append(item)
        if self._retry_handle is None:
            # A Conflict is a concurrent change: retry at once; anything
            # else is an outage: back off, while other writes go on.
            delay = 0.0 if isinstance(err, Conflict) else self._backoff
            self._retry_handle = asyncio.get_running_loop().call_later(delay, self._requeue)

    def _requeue(self) -> None:
        self._retry_handle = None
        self._queue.extend(self._retry)
        self._retry.clear()
        self._wake.set()

    def _lost(self, err: FenceLost) -> None:
        if self._closed is not None:
            return  # the other flight lost it first: the term ends once
        self._on_fence_lost(f"a fenced state write failed: {err.message}")
        self.close(NotLeader("broker", None))

