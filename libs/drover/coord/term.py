"""A leadership term and the contract every leader-only component obeys.

A :class:`Term` is what a replica won: the election key, its create_revision
(the term number, which is also the fence), and the revision at which the
win was confirmed (the barrier: a leader's view of state must reach it
before it acts). It also carries a handle to the term's scope: leader work
spawned there runs in one task group, cancelled the moment leadership ends
(session lost, own key gone, fence failed, resign).

:class:`LeaderComponent` is the shared enable/disable contract of the
eval-broker, the deployment watcher and any other leader-only part:
``establish`` starts leader work for a term, ``revoke`` stops it and drops
leader-only state. The runner (:mod:`drover.coord.leadership`) calls them
under deadlines; neither may block without one.
"""

from __future__ import annotations

from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from drover.coord.fence import Fence, FenceKV, fenced_txn
from drover.coord.kv import Compare, Op, TxnResult

__all__ = ["LeaderComponent", "LeaseView", "Term", "TermScope"]


class LeaseView(Protocol):
    """The lease a term was won on, as the lease clock judges it (a Session)."""

    def safe(self, now: float) -> bool: ...


class TermScope(Protocol):
    """What a term's holder may do with leadership (implemented by the runner)."""

    @property
    def ended(self) -> bool: ...

    def spawn(self, coro: Coroutine[Any, Any, Any], *, name: str | None = None) -> Any: ...

    def report_lost(self, reason: str) -> None: ...


@dataclass(frozen=True)
class Term:
    service: str
    leader_key: str
    revision: int
    won_at_revision: int
    address: str
    scope: TermScope | None = field(default=None, compare=False, repr=False)
    # The session the term was won on: leader work checks it synchronously,
    # right before acting (see :mod:`drover.coord.guard`).
    lease: LeaseView | None = field(default=None, compare=False, repr=False)

    @property
    def fence(self) -> Fence:
        return Fence(self.leader_key, self.revision)

    @property
    def ended(self) -> bool:
        return self.scope is not None and self.scope.ended

    def alive(self, now: float) -> bool:
        """Not ended and, by the monotonic lease clock at ``now``, still safe."""
        if self.ended:
            return False
        return self.lease is None or self.lease.safe(now)

    def spawn(self, coro: Coroutine[Any, Any, Any], *, name: str | None = None) -> Any:
        """Run ``coro`` in the term's task group (cancelled when the term ends)."""
        if self.scope is None:
            coro.close()
            raise RuntimeError("this term has no scope (not issued by a Leadership)")
        return self.scope.spawn(coro, name=name)

    def report_lost(self, reason: str) -> None:
        """End leadership now, e.g. a remote write came back FENCE_LOST."""
        if self.scope is not None:
            self.scope.report_lost(reason)

    async def txn(self, kv: FenceKV, compares: Sequence[Compare] = (),
                  ops: Sequence[Op] = ()) -> TxnResult:
        """A fenced etcd txn; a failed fence ends this term before raising."""
        return await fenced_txn(kv, self.fence, compares, ops, on_lost=self.report_lost)


@runtime_checkable
class LeaderComponent(Protocol):
    """Enabled on the leader only. Both calls must finish within the runner's
    deadline; ``revoke`` must be safe to call when ``establish`` failed or
    never ran."""

    async def establish(self, term: Term) -> None: ...

    async def revoke(self) -> None: ...
