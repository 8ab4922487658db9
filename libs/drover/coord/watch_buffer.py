"""The pure core of the resilient watch: message types, grouping of raw
events by revision, and the bounded buffer between the etcd stream and the
consumer.

Memory bound: the buffer counts events, not messages. When it holds
``max_events`` or more, the shell stops reading the etcd stream (cancels it)
and resumes from the last buffered revision + 1 once the consumer has drained
it: etcd's own history is the overflow area, not our heap. Only if that
history was compacted meanwhile does the consumer get a :class:`Resync`.

A :class:`Resync` supersedes everything before it (it is the full state at
its revision), so pushing one drops the batches still buffered.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from drover.coord.kv import KV
from drover.coord.kv import WatchEvent as KVEvent

__all__ = [
    "Batch",
    "EventType",
    "KeyValue",
    "Resync",
    "WatchBuffer",
    "WatchEvent",
    "WatchMessage",
    "batches_from_events",
    "kv_from_kv",
]


class EventType(enum.Enum):
    PUT = 0
    DELETE = 1


@dataclass(frozen=True, slots=True)
class KeyValue:
    key: bytes
    value: bytes
    create_revision: int
    mod_revision: int
    #: Not carried by the typed KV layer's watch (always 0 from it).
    version: int = 0
    lease: int = 0


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: EventType
    kv: KeyValue  # for DELETE: the key, value empty, mod_revision = deletion revision


@dataclass(frozen=True, slots=True)
class Batch:
    """All events of one etcd revision (one txn), in txn order."""

    revision: int
    events: tuple[WatchEvent, ...]


@dataclass(frozen=True, slots=True)
class Resync:
    """The complete state of the prefix at ``revision``: replace, don't merge.
    Sent first, and again whenever history needed to resume was compacted."""

    revision: int
    items: tuple[KeyValue, ...]
    reason: str = "initial"


WatchMessage = Batch | Resync

_TYPES = (EventType.PUT, EventType.DELETE)


def kv_from_kv(kv: KV) -> KeyValue:
    return KeyValue(kv.key, kv.value, kv.create_revision, kv.mod_revision)


def batches_from_events(events: Iterable[KVEvent]) -> list[Batch]:
    """Group the typed layer's watch events by revision, keeping order."""
    out: list[Batch] = []
    current: list[WatchEvent] = []
    rev = 0
    for ev in events:
        kv = ev.kv
        if kv.mod_revision != rev and current:
            out.append(Batch(rev, tuple(current)))
            current = []
        rev = kv.mod_revision
        current.append(WatchEvent(_TYPES[ev.deleted], KeyValue(
            kv.key, kv.value, kv.create_revision, kv.mod_revision)))
    if current:
        out.append(Batch(rev, tuple(current)))
    return out


class WatchBuffer:
    """FIFO of watch messages, bounded by a count of events."""

    def __init__(self, max_events: int) -> None:
        if max_events < 1:
            raise ValueError(f"max_events must be >= 1, got {max_events}")
        self.max_events = max_events
        self._items: deque[WatchMessage] = deque()
        self._events = 0
        self.last_revision = 0

    def __len__(self) -> int:
        return len(self._items)

    @property
    def events(self) -> int:
        return self._events

    @property
    def full(self) -> bool:
        return self._events >= self.max_events

    def push(self, msg: WatchMessage) -> None:
        if msg.revision < self.last_revision or (
            isinstance(msg, Batch) and msg.revision == self.last_revision
        ):
            raise ValueError(f"watch message at revision {msg.revision} is not after "
                             f"{self.last_revision}")
        if isinstance(msg, Resync):
            self._items.clear()
            self._events = 0
        else:
            self._events += len(msg.events)
        self._items.append(msg)
        self.last_revision = msg.revision

    def pop_many(self, limit: int) -> list[WatchMessage]:
        out: list[WatchMessage] = []
        while self._items and len(out) < limit:
            msg = self._items.popleft()
            if isinstance(msg, Batch):
                self._events -= len(msg.events)
            out.append(msg)
        return out
