"""Which membership revisions changed the server lists: the barrier's yardstick.

A proxy replica publishes, as its applied revision, the revision of the last
membership change *that mattered to its lists* (a backend replica joined,
left, moved or changed version). It does not publish every revision it
sees: proxies are members too, so if each one published the revision of
every membership event, each publication would be an event for all the
others and they would chase each other forever.

A caller may still ask "has everyone applied revision N?" for any N (for
example the header revision of a read made after its change). A replica
has applied N exactly when it has applied the last list-changing revision at
or below N, so the answering replica maps N to that revision
(:meth:`ChangeLog.effective_target`) from the changes its own watch saw. It
can only do so once its own view reaches N (:attr:`ChangeLog.observed`);
before that the answer is unknown (None) and the barrier keeps waiting.

The log is bounded: when old changes are forgotten, a target at or below the
forgotten range maps to itself, as does a target older than this replica's
first view; both can only make the barrier stricter (never report
convergence too early). Pure: no asyncio, no etcd.
"""

from __future__ import annotations

import bisect

from drover.proxy.errors import InvalidRevision

DEFAULT_CAPACITY = 4096


class ChangeLog:
    """Revisions at which this replica saw the server lists change."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 1:
            raise InvalidRevision(f"capacity must be positive, got {capacity}")
        self._capacity = capacity
        self._changes: list[int] = []
        self._observed = 0
        # Changes at or below this revision may have been dropped.
        self._forgotten_through = 0

    @property
    def observed(self) -> int:
        """The highest membership revision this replica has seen (0: none)."""
        return self._observed

    @property
    def last_change(self) -> int:
        return self._changes[-1] if self._changes else self._forgotten_through

    def record(self, revision: int, *, changed: bool) -> None:
        """The watch delivered ``revision``; ``changed`` if it changed the lists."""
        if revision < 0:
            raise InvalidRevision(
                f"revision must not be negative, got {revision}",
                metadata={"revision": str(revision)},
            )
        self._observed = max(self._observed, revision)
        if not changed:
            return
        index = bisect.bisect_left(self._changes, revision)
        if index < len(self._changes) and self._changes[index] == revision:
            return
        self._changes.insert(index, revision)
        if len(self._changes) > self._capacity:
            self._forgotten_through = self._changes.pop(0)

    def mark_quiet_through(self, revision: int) -> None:
        """A read at ``revision`` showed the same backends as our view: nothing
        list-changing happened between what we observed and it."""
        self._observed = max(self._observed, revision)

    def effective_target(self, target: int) -> int | None:
        """The revision a replica must have applied to have applied ``target``.

        None while this replica has not observed ``target`` itself.
        """
        if target < 0:
            raise InvalidRevision(
                f"target revision must not be negative, got {target}",
                metadata={"revision": str(target)},
            )
        if self._observed < target:
            return None
        if target <= self._forgotten_through:
            return target
        index = bisect.bisect_right(self._changes, target)
        if index == 0:
            # target predates our first view: we cannot tell which change it
            # needs, so require target itself (stricter, never too early).
            return target
        return self._changes[index - 1]
