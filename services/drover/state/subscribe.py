"""The event stream: changes in revision order, from any from_index etcd kept.

The hub is a cache listener. Each subscriber has a bounded queue of whole
revisions; one that falls behind by more than its buffer is ended with
RESOURCE_EXHAUSTED ``SUBSCRIBER_TOO_SLOW`` rather than growing memory
without bound (it re-reads and subscribes again from its last index).

Where a stream starts: ``from_index`` 0 means "from now". Recent history is
replayed from the hub's ring (:mod:`.core.replay_ring`: the last
``replay_window`` seconds, at most ``replay_events`` events); older
history is read from etcd with a watch from ``from_index + 1`` up to the
revision at which the live queue took over, so nothing is missed or doubled.
If etcd has compacted it, the call fails with OUT_OF_RANGE
``INDEX_COMPACTED``: the client re-reads state and subscribes from the
index of that read (like a 410 Gone). A cache re-list ends every stream the
same way, since events between the lists are lost to the cache.

Encoded once per change, not per subscriber: the hub hands every
subscriber's queue the same batch object, which parses each change's value
straight into its event and serializes it at most once, and joins the
responses of each distinct interest at most once (:class:`_Batch`). Streams
yield those bytes and gRPC sends them as they are
(:mod:`drover.rpc.encoded`); the wire format is unchanged.

A quiet stream carries heartbeats (no events, the current index) every
``heartbeat_interval`` the client asked for (default 10 s): silence much
longer than that means the server stopped, so a client (the proxy
included) can detect a frozen server within a bound it chose. A replica
that has lost etcd (no etcd call answered for ``max_silence``) ends its
streams with UNAVAILABLE ``ETCD_UNAVAILABLE`` instead of heartbeating.
A replica shutting down (:meth:`Hub.close`, before its etcd client closes)
ends every stream, and refuses new ones, with UNAVAILABLE
``REPLICA_STOPPING``: clients resume on another replica at once instead of
waiting out heartbeats from a cache that no longer moves.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from drover.acl import Acl
from drover.acl.topics import NAMESPACED_TOPICS, may_read
from drover.api.state.v1 import state_pb2
from drover.coord.errors import EtcdUnavailable
from drover.coord.kv import Compacted, prefix_end
from drover.errors import DroverError
from drover.state.cache import Cache, Change
from drover.state.config import SubscribeConfig
from drover.state.contact_proof import ContactProof
from drover.state.core import codec
from drover.state.core.replay_ring import ReplayRing
from drover.state.errors import IndexCompacted, ReplicaStopping, SubscriberTooSlow


@dataclass(frozen=True)
class Interest:
    """What one stream wants. ``reader``: the rules its namespaced events
    are filtered by (:func:`drover.acl.topics.event_reader`; None: every
    event), so a stream of every namespace delivers only those its token
    may read."""

    topics: frozenset[int]
    keys: frozenset[str]
    namespace: str
    reader: Acl | None = None

    @functools.cached_property
    def kinds(self) -> frozenset[str]:
        """The kinds whose topic this interest wants (what :meth:`wants`
        tests first, as one set lookup per change)."""
        return frozenset(kind for kind, topic in codec.TOPICS.items()
                         if not self.topics or topic in self.topics)

    @functools.cached_property
    def by_kind_only(self) -> bool:
        """No key or namespace filter: :attr:`kinds` alone decides."""
        return not self.keys and self.namespace in ("", "*") and self.reader is None

    def wants(self, c: Change) -> bool:
        topic = codec.TOPICS.get(c.kind)
        if topic is None:
            return False
        if self.topics and topic not in self.topics:
            return False
        if self.keys and c.id not in self.keys:
            return False
        if self.namespace not in ("", "*") and c.namespace != self.namespace:
            return False
        return topic not in NAMESPACED_TOPICS or may_read(self.reader, c.namespace)


def event_chunk(c: Change) -> bytes:
    """``c`` as a serialized SubscribeResponse holding just its event.

    A response of several events is the concatenation of their chunks and
    then its index (:func:`encode_responses`): protobuf parses concatenated
    messages as one, repeated fields appended in order, and the bytes are
    exactly what serializing the whole response would give (field 1, the
    events, before field 2, the index). The payload is parsed straight into
    the event (no copy)."""
    r = state_pb2.SubscribeResponse()
    topic: Any = codec.TOPICS[c.kind]
    ev = r.events.add(
        topic=topic, namespace="" if c.namespace == codec.GLOBAL_NS else c.namespace,
        key=c.id, index=c.revision,
        type=state_pb2.EVENT_TYPE_DELETE if c.deleted else state_pb2.EVENT_TYPE_UPSERT,
    )
    if not c.deleted:
        codec.decode_into(c.kind, getattr(ev, codec.PAYLOAD_FIELD[c.kind]), c.value,
                          c.create_revision, c.revision)
    return r.SerializeToString()


def index_only(index: int) -> bytes:
    """A serialized response with no events (a heartbeat, or the catch-up mark)."""
    return state_pb2.SubscribeResponse(index=index).SerializeToString()


Chunk = Callable[[int, Change], bytes]


def _plain_chunk(_: int, c: Change) -> bytes:
    return event_chunk(c)


def encode_responses(changes: Sequence[Change], interest: Interest, after: int = 0,
                     chunk: Chunk = _plain_chunk) -> list[bytes]:
    """The serialized responses ``interest`` gets from ``changes`` (those after
    revision ``after``): one per revision, in order. ``chunk(i, changes[i])``
    encodes one event (a shared batch memoizes it)."""
    out: list[bytes] = []
    parts: list[bytes] = []
    rev = -1
    kinds, by_kind = interest.kinds, interest.by_kind_only
    for i, c in enumerate(changes):
        if c.revision <= after or c.kind not in kinds or not (by_kind or interest.wants(c)):
            continue
        if c.revision != rev:
            if parts:
                parts.append(index_only(rev))
                out.append(b"".join(parts))
                parts = []
            rev = c.revision
        parts.append(chunk(i, c))
    if parts:
        parts.append(index_only(rev))
        out.append(b"".join(parts))
    return out


class _Batch:
    """One batch of changes the cache applied, as every subscriber's queue
    holds it (one object, shared): each change is encoded at most once, and
    the responses of each distinct interest at most once, whatever the
    number of subscribers (the broker's replicas all ask for the same)."""

    __slots__ = ("_by_interest", "_chunks", "changes", "revision")

    def __init__(self, revision: int, changes: list[Change]) -> None:
        self.revision, self.changes = revision, changes
        self._chunks: list[bytes | None] = [None] * len(changes)
        self._by_interest: dict[Interest, list[bytes]] = {}

    def _chunk(self, i: int, c: Change) -> bytes:
        got = self._chunks[i]
        if got is None:
            got = self._chunks[i] = event_chunk(c)
        return got

    def encoded(self, interest: Interest, after: int) -> list[bytes]:
        """The responses for ``interest``, of changes after revision ``after``."""
        if self.changes and self.changes[0].revision <= after:
            # A stream that started inside this batch: its own cut.
            return encode_responses(self.changes, interest, after, self._chunk)
        got = self._by_interest.get(interest)
        if got is None:
            got = self._by_interest[interest] = encode_responses(
                self.changes, interest, chunk=self._chunk)
        return got


class _Sub:
    def __init__(self, interest: Interest, size: int) -> None:
        self.interest = interest
        self.queue: asyncio.Queue[_Batch | None] = asyncio.Queue(size)
        self.error: DroverError | None = None


class Hub:
    def __init__(self, cache: Cache, config: SubscribeConfig,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.cache, self.config = cache, config
        self._clock = clock
        self._subs: set[_Sub] = set()
        self._ring: ReplayRing[Change] = ReplayRing(
            cache.revision, limit=config.replay_events, window=config.replay_window)
        cache.listeners.append(self._on_batch)
        cache.reset_listeners.append(self._on_reset)
        self._contact = ContactProof(cache)
        self._closed = False

    async def _in_contact(self) -> bool:
        """Whether this replica heard from etcd within ``max_silence``; when
        not, one consistent read (shared by every stream asking meanwhile,
        bounded by the cache's marker timeout) decides."""
        return await self._contact.within(self.config.max_silence)

    def _on_batch(self, revision: int, changes: list[Change]) -> None:
        self._ring.append(revision, changes, self._clock())
        batch = _Batch(revision, changes)
        for sub in list(self._subs):
            try:
                sub.queue.put_nowait(batch)
            except asyncio.QueueFull:
                self._end(sub, SubscriberTooSlow(
                    f"subscriber fell more than {self.config.buffer_revisions} revisions "
                    "behind; re-read and subscribe again from the last index"))

    def _on_reset(self, revision: int) -> None:
        self._ring.reset(revision)
        for sub in list(self._subs):
            self._end(sub, IndexCompacted(
                "the state cache re-listed after losing its watch; re-read and subscribe "
                f"again from index {revision}", metadata={"index": str(revision)}))

    def _join(self, interest: Interest) -> _Sub:
        """A new stream's queue, fed from now on (refused once closed)."""
        if self._closed:
            raise self._stopping()
        sub = _Sub(interest, self.config.buffer_revisions)
        self._subs.add(sub)
        return sub

    def close(self) -> None:
        """End every stream, and refuse new ones, with UNAVAILABLE
        ``REPLICA_STOPPING`` (the replica is shutting down; module doc)."""
        self._closed = True
        for sub in list(self._subs):
            self._end(sub, self._stopping())

    @staticmethod
    def _stopping() -> ReplicaStopping:
        return ReplicaStopping("this state replica is shutting down; subscribe again on "
                               "another replica from the last index")

    def _end(self, sub: _Sub, err: DroverError) -> None:
        """End ``sub`` with ``err`` before anything still queued: the client
        resumes from the last index it got, so a queued revision must not be
        sent after one dropped to make room (a gap it would never notice)."""
        sub.error = err
        self._subs.discard(sub)
        while not sub.queue.empty():
            sub.queue.get_nowait()
        sub.queue.put_nowait(None)

    async def _history(self, interest: Interest, start: int, until: int) -> (
        AsyncIterator[bytes]
    ):
        """Changes in (start, until] read back from etcd's history."""
        if start >= until:
            return
        try:
            async for r in self._read_history(interest, start, until):
                yield r
        except Compacted as err:
            raise IndexCompacted(
                f"index {start} is compacted in etcd (compacted up to {err.compact_revision}); "
                "re-read and subscribe again from the index of that read",
                metadata={"from_index": str(start),
                          "compact_revision": str(err.compact_revision)},
            ) from err

    async def _read_history(self, interest: Interest, start: int, until: int) -> (
        AsyncIterator[bytes]
    ):
        prefix = self.cache.keys.base.encode()
        watch = await self.cache.store.watch(prefix, prefix_end(prefix), start + 1)
        try:
            async for batch in watch:
                changes = []
                for ev in batch.events:
                    ok = self.cache.keys.parse(ev.kv.key)
                    if ok is None or ev.kv.mod_revision > until:
                        continue
                    changes.append(Change(ok.kind, ok.namespace, ok.id, ev.kv.mod_revision,
                                          ev.deleted, ev.kv.value, ev.kv.create_revision))
                for r in encode_responses(changes, interest):
                    yield r
                if batch.revision >= until:
                    return
        finally:
            await watch.close()

    async def subscribe(self, request: Any, reader: Acl | None = None) -> AsyncIterator[bytes]:
        """The stream's responses, serialized (``SubscribeResponse`` bytes: the
        servicer hands them to gRPC as they are, see :mod:`drover.rpc.encoded`);
        ``reader`` filters its namespaced events (:class:`Interest`)."""
        interest = Interest(frozenset(request.topics), frozenset(request.keys),
                            request.namespace, reader)
        asked = request.heartbeat_interval
        heartbeat = self.config.heartbeat_for(asked.seconds + asked.nanos / 1e9)
        sub = self._join(interest)
        try:
            now = self.cache.revision
            start = request.from_index or now
            if start < now:
                backlog = self._ring.since(start, now)
                if backlog is not None:
                    for r in encode_responses(backlog, interest):
                        yield r
                else:
                    async for r in self._history(interest, start, now):
                        yield r
            # Indexes never go backwards, even on a replica whose cache is
            # behind the from_index a client resumes from (elsewhere).
            yield index_only(max(start, now))
            loop = asyncio.get_running_loop()
            sent = loop.time()
            while True:
                try:
                    wait = min(sent + heartbeat - loop.time(), self.config.silence_check)
                    async with asyncio.timeout(max(0.0, wait)):
                        item = await sub.queue.get()
                except TimeoutError:
                    silent = self.cache.last_contact()
                    if not await self._in_contact():
                        raise EtcdUnavailable(
                            f"this state replica has not heard from etcd for {silent:.0f}s; "
                            "subscribe again on another replica from the last index") from None
                    if loop.time() - sent < heartbeat:
                        continue
                    # The queue is empty: every change up to the cache's
                    # revision was delivered (listeners run as it applies).
                    yield index_only(max(start, self.cache.revision))
                    sent = loop.time()
                    continue
                if item is None:
                    assert sub.error is not None
                    raise sub.error
                out = item.encoded(interest, start)
                for r in out:
                    yield r
                if out:
                    sent = loop.time()
                elif loop.time() - sent >= heartbeat and item.revision > start:
                    # Busy with changes this stream does not want: still a
                    # heartbeat, at the revision just passed (not the cache's,
                    # which may be ahead of changes still queued).
                    yield index_only(item.revision)
                    sent = loop.time()
        finally:
            self._subs.discard(sub)
