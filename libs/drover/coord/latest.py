"""A drop-but-last channel: the newest value wins, writers never block.

Nomad's leadership-flapping deadlock came from a bounded channel of
leadership notices: the writer (the election) blocked because the reader
(the leader loop) was busy revoking, and the reader waited on the writer.
Here a write only replaces the held value and bumps a version counter, so
it cannot block, and a reader that was busy sees only the latest value plus
how many it missed (``missed``), which is exactly what the leadership
decision needs (:mod:`drover.coord.decide`).

:class:`Latest` is the pure core (no asyncio). :class:`LatestChannel` adds
one asyncio.Event so readers can await a change.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Seen(Generic[T]):
    """What a reader got: the value, its version, and how many it skipped."""

    value: T
    version: int
    missed: int


class Latest(Generic[T]):
    """Holds the newest value and a version that counts every write."""

    __slots__ = ("_value", "_version")

    def __init__(self, initial: T) -> None:
        self._value = initial
        self._version = 0

    @property
    def value(self) -> T:
        return self._value

    @property
    def version(self) -> int:
        return self._version

    def set(self, value: T) -> int:
        self._value = value
        self._version += 1
        return self._version

    def changed_since(self, version: int) -> bool:
        return self._version > version

    def read(self, since: int) -> Seen[T]:
        """The current value; ``missed`` counts writes between ``since`` and it."""
        return Seen(self._value, self._version, max(0, self._version - since - 1))


class LatestChannel(Generic[T]):
    """:class:`Latest` plus awaiting: ``await wait_newer(v)`` returns at once if
    something newer than version ``v`` is held, else when the next write lands."""

    def __init__(self, initial: T) -> None:
        self._latest: Latest[T] = Latest(initial)
        self._changed = asyncio.Event()

    @property
    def value(self) -> T:
        return self._latest.value

    @property
    def version(self) -> int:
        return self._latest.version

    def publish(self, value: T) -> int:
        """Replace the held value. Never blocks, never fails."""
        version = self._latest.set(value)
        self._changed.set()
        return version

    async def wait_newer(self, since: int) -> Seen[T]:
        while not self._latest.changed_since(since):
            self._changed.clear()
            await self._changed.wait()
        return self._latest.read(since)
