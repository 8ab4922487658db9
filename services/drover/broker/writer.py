"""The leader's fenced writes to the state store, group-committed.

One :class:`FencedWriter` per leadership term. Everything the leader writes
goes through it with the term's fence: worker outcomes (Ack) and the core's
effects (cancellations, failures and their follow-ups, unblocks).

Group commit: concurrent writes are merged into one ``UpdateEvaluations``
call (one etcd txn) of at most ``max_objects`` evaluations, so sixteen
workers acking at once cost one round trip, not sixteen. Outcomes are
*updates* compared on the ``modify_index`` the broker held and follow-ups
are *creates* (:class:`~drover.broker.effects.WriteGroup`): nothing the
broker writes can re-create an evaluation deleted meanwhile. An evaluation
written twice in one batch keeps its last body (etcd refuses duplicate
keys in a txn). A batch the store refuses (a worker's malformed follow-up,
an evaluation deleted or changed meanwhile) is retried group by group, so
one bad group fails alone. Writes under different fences (an Ack is fenced
with the term its delivery token carries) never share a txn.

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

Tracing: each write remembers the trace context it was made in; a batch's
``broker write`` span is the child of its first write's context and links
the others, so an Ack's trace goes on to the state service's txn.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from opentelemetry import context as otel_context
from opentelemetry import trace

from drover.api.types.v1.evaluation_pb2 import Evaluation
from drover.broker.effects import WriteGroup
from drover.coord.fence import Fence
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

log = logging.getLogger(__name__)
_tracer = trace.get_tracer("drover.broker.writer")

# etcd's 128 operations per txn, minus the state service's own marker put.
MAX_OBJECTS = 127


class UpdateApi(Protocol):
    """The one call the writer makes (a slice of BrokerStateApi)."""

    async def update(self, updates: Sequence[Evaluation], creates: Sequence[Evaluation],
                     fence: Fence) -> int: ...


# What an effect write may be refused for without a retry ever helping:
# invalid, deleted or changed meanwhile, or created already.
_FINAL = (InvalidArgument, NotFound, AlreadyExists, FailedPrecondition)


@dataclass
class _Pending:
    group: WriteGroup
    # None for an effect (nobody awaits it; retried until written).
    done: asyncio.Future[int] | None = None
    attempts: int = field(default=0)
    # None: the term's fence.
    fence: Fence | None = None
    # The trace context the write was made in (an RPC's server span).
    context: otel_context.Context = field(default_factory=otel_context.get_current)


class FencedWriter:
    def __init__(
        self,
        api: UpdateApi,
        fence: Fence,
        *,
        on_written: Callable[[WriteGroup, int], None],
        on_fence_lost: Callable[[str], None],
        alive: Callable[[], bool] = lambda: True,
        max_objects: int = MAX_OBJECTS,
        retry_backoff: float = 0.5,
    ) -> None:
        self._api = api
        self._fence = fence
        self._alive = alive
        self._on_written = on_written
        self._on_fence_lost = on_fence_lost
        self._max = max_objects
        self._backoff = retry_backoff
        self._queue: list[_Pending] = []
        self._wake = asyncio.Event()
        self._closed: DroverError | None = None
        self._retry: list[_Pending] = []
        # The batch being written: a cancelled writer (the term ended) must
        # still answer its callers.
        self._inflight: list[_Pending] = []
        self._retry_handle: asyncio.TimerHandle | None = None

    def submit(self, groups: Sequence[WriteGroup]) -> None:
        """Queue effect writes (fire and forget; retried while the term lasts)."""
        if self._closed is not None or not groups:
            return
        self._queue.extend(_Pending(g) for g in groups if g.size)
        self._wake.set()

    async def write(self, group: WriteGroup, fence: Fence | None = None) -> int:
        """Write ``group`` in one txn (merged with others); the store index.

        ``fence`` overrides the term's (an Ack is fenced with its token's term).
        """
        if self._closed is not None:
            raise self._closed
        if group.size > self._max:
            raise InvalidArgument(
                f"an ack writes at most {self._max} evaluations (itself and "
                f"{self._max - 1} follow-ups), got {group.size}",
                metadata={"field": "follow_ups"},
            )
        done: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._queue.append(_Pending(group, done, fence=None if fence == self._fence else fence))
        self._wake.set()
        return await done

    def close(self, err: DroverError) -> None:
        """End the term's writes: waiting callers get ``err``; effects are dropped."""
        self._closed = err
        for item in (*self._inflight, *self._queue):
            if item.done is not None and not item.done.done():
                item.done.set_exception(err)
        self._inflight = []
        self._queue.clear()
        self._retry.clear()
        if self._retry_handle is not None:
            self._retry_handle.cancel()
            self._retry_handle = None
        self._wake.set()

    async def run(self) -> None:
        """Flush until closed (spawned in the term's task group)."""
        try:
            while self._closed is None:
                if not self._queue:
                    self._wake.clear()
                    await self._wake.wait()
                    continue
                self._inflight = self._take()
                await self._flush(self._inflight)
                self._inflight = []
        finally:
            if self._closed is None:
                self.close(NotLeader("broker", None))

    def _take(self) -> list[_Pending]:
        batch: list[_Pending] = []
        size = 0
        while self._queue:
            head = self._queue[0]
            n = head.group.size
            if batch and (size + n > self._max or head.fence != batch[0].fence):
                break
            batch.append(self._queue.pop(0))
            size += n
        return batch

    async def _flush(self, batch: list[_Pending]) -> None:
        links = [trace.Link(c) for c in
                 (trace.get_current_span(p.context).get_span_context() for p in batch[1:])
                 if c.is_valid]
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
            self._lost(err)
            return
        except DroverError as err:
            if len(batch) > 1:
                # One group may be at fault: try each alone.
                for item in batch:
                    await self._flush([item])
                return
            self._failed(batch[0], err)
            return
        for item in batch:
            self._succeeded(item, index)

    async def _update(self, batch: list[_Pending]) -> int:
        updates: dict[str, Evaluation] = {}
        creates: dict[str, Evaluation] = {}
        for item in batch:
            for ev in item.group.evaluations:
                updates.pop(ev.id, None)
                updates[ev.id] = ev
            for ev in item.group.creates:
                creates[ev.id] = ev
        # The last synchronous moment before the write leaves: leader only.
        if not self._alive():
            raise FenceLost("the term's lease clock ran out before the write")
        fence = batch[0].fence or self._fence
        return await self._api.update(list(updates.values()), list(creates.values()), fence)

    def _succeeded(self, item: _Pending, index: int) -> None:
        try:
            self._on_written(item.group, index)
        except Exception:
            log.exception("broker: after-write hook failed")
        if item.done is not None and not item.done.done():
            item.done.set_result(index)

    def _failed(self, item: _Pending, err: DroverError) -> None:
        if item.done is not None:
            if not item.done.done():
                item.done.set_exception(err)
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
        self._on_fence_lost(f"a fenced state write failed: {err.message}")
        self.close(NotLeader("broker", None))
