"""The demultiplexer: one allocation stream in, the owning watcher woken.

The leader holds one allocation subscription for all deployments (so the
number of subscriptions stays 2 however many deployments run); this router
fans it out in memory. A watcher wakes only when one of *its* allocations
changed in a way that matters to a deployment: a new placement, a change of
deployment health or canary flag, of desired status, of client status into
or between the terminal ones (pending to running changes no count: the
watcher reads only whether a client status is terminal, and which), or its
removal. Everything else (other deployments' allocations, allocations of no
watched deployment, a modify_index bump with nothing relevant changed) is
counted as ignored and wakes nobody. So is a *stale* version (a lower
``modify_index`` than the one known): the shell lists a new deployment's
allocations with a consistent read while the allocation stream may still
deliver older events, which must not roll the watcher's view back.

It remembers, per watched allocation, only the few fields that matter, and
an allocation → deployment map so that a deletion (which carries just an id)
still reaches its owner.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from drover.api.types.v1 import allocation_pb2

from .accounting import CLIENT_TERMINAL, health_of

_NOT_TERMINAL = -1  # pending, running: the same to every count


@dataclass(frozen=True)
class _View:
    deployment_id: str
    healthy: bool | None
    canary: bool
    client_status: int
    desired_status: int
    modify_index: int = field(default=0, compare=False)


def _view(alloc: allocation_pb2.Allocation) -> _View:
    status = alloc.client_status
    return _View(
        deployment_id=alloc.deployment_id,
        healthy=health_of(alloc),
        canary=alloc.deployment_status.canary,
        client_status=status if status in CLIENT_TERMINAL else _NOT_TERMINAL,
        desired_status=alloc.desired_status,
        modify_index=alloc.modify_index,
    )


@dataclass(frozen=True)
class RouterStats:
    watched_deployments: int
    watched_allocations: int
    wakeups: int
    ignored: int


class AllocRouter:
    def __init__(self) -> None:
        self._views: dict[str, _View] = {}
        self._allocs_of: dict[str, set[str]] = {}
        self._wakeups: dict[str, int] = {}  # per watched deployment
        self._total_wakeups = 0  # a counter: never decreases on unwatch
        self._ignored = 0

    def watch(
        self, deployment_id: str, allocs: Iterable[allocation_pb2.Allocation] = ()
    ) -> None:
        """Route ``deployment_id``'s allocations from now on; ``allocs`` are known."""
        self._allocs_of.setdefault(deployment_id, set())
        self._wakeups.setdefault(deployment_id, 0)
        for alloc in allocs:
            if alloc.deployment_id == deployment_id:
                self._remember(alloc)

    def unwatch(self, deployment_id: str) -> None:
        for alloc_id in self._allocs_of.pop(deployment_id, set()):
            self._views.pop(alloc_id, None)
        self._wakeups.pop(deployment_id, None)

    def watching(self, deployment_id: str) -> bool:
        return deployment_id in self._allocs_of

    def route(self, alloc: allocation_pb2.Allocation) -> str | None:
        """The deployment to wake for this allocation change, or None."""
        owner = alloc.deployment_id
        previous = self._views.get(alloc.id)
        if previous is not None and previous.deployment_id != owner:
            # Allocations don't move between deployments; if one ever does,
            # the old owner must forget it before the new owner counts it.
            self._forget(alloc.id)
            previous = None
        if owner not in self._allocs_of:
            self._ignored += 1
            return None
        view = _view(alloc)
        if previous is not None and view.modify_index < previous.modify_index:
            self._ignored += 1  # an older version than the one known
            return None
        if previous == view:
            self._ignored += 1
            return None
        self._remember(alloc, view)
        self._wake(owner)
        return owner

    def route_deleted(self, alloc_id: str) -> str | None:
        owner = self._forget(alloc_id)
        if owner is None:
            self._ignored += 1
            return None
        self._wake(owner)
        return owner

    def wakeups(self, deployment_id: str) -> int:
        return self._wakeups.get(deployment_id, 0)

    def stats(self) -> RouterStats:
        return RouterStats(
            watched_deployments=len(self._allocs_of),
            watched_allocations=len(self._views),
            wakeups=self._total_wakeups,
            ignored=self._ignored,
        )

    def _wake(self, deployment_id: str) -> None:
        self._wakeups[deployment_id] += 1
        self._total_wakeups += 1

    def _remember(self, alloc: allocation_pb2.Allocation, view: _View | None = None) -> None:
        self._views[alloc.id] = view or _view(alloc)
        self._allocs_of[alloc.deployment_id].add(alloc.id)

    def _forget(self, alloc_id: str) -> str | None:
        view = self._views.pop(alloc_id, None)
        if view is None:
            return None
        self._allocs_of.get(view.deployment_id, set()).discard(alloc_id)
        return view.deployment_id
