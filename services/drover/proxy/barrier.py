"""The async convergence barrier: wait until every live proxy replica applied N.

Any replica can answer. It evaluates :func:`~drover.proxy.core.convergence.convergence`
over the proxy replicas in its membership view, against the revision each
must have applied to have applied N (:meth:`ChangeLog.effective_target`),
after every membership change, until all are there or the timeout ends; the
answer then lists who is behind and at which revision. Its own entry uses
its in-memory applied revision (fresher than the copy in etcd).

When its own view has not reached N yet (N was made by a write outside
membership), it reads membership once per poll to learn whether anything
list-changing happened in between (:meth:`Discovery.confirm_quiet`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from drover.coord import Member
from drover.proxy.core.change_log import ChangeLog
from drover.proxy.core.convergence import Convergence, ReplicaRevision, convergence
from drover.proxy.errors import InvalidRevision, InvalidTimeout

#: Re-evaluate at least this often even without a membership event.
POLL = 0.25


class View(Protocol):
    """What the barrier reads of discovery."""

    @property
    def changelog(self) -> ChangeLog: ...

    @property
    def proxies(self) -> tuple[Member, ...]: ...

    async def wait_changed(self, within: float) -> None: ...

    async def confirm_quiet(self) -> None: ...


class Barrier:
    def __init__(
        self,
        view: View,
        *,
        replica: str,
        applied: Callable[[], int],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._view = view
        self._replica = replica
        self._applied = applied
        self._clock = clock

    def evaluate(self, target: int) -> tuple[Convergence, bool]:
        """The answer now, and whether this replica knows N's effective target."""
        effective = self._view.changelog.effective_target(target)
        entries = [
            ReplicaRevision(
                m.replica,
                m.address,
                self._applied() if m.replica == self._replica else m.applied_revision,
            )
            for m in self._view.proxies
        ]
        return convergence(entries, target if effective is None else effective), (
            effective is not None
        )

    async def wait(self, revision: int, wait_for: float) -> Convergence:
        """Converged, or the state at the end of ``wait_for`` seconds."""
        timeout = wait_for
        if revision <= 0:
            raise InvalidRevision(
                f"revision must be positive, got {revision}",
                metadata={"revision": str(revision)},
            )
        if timeout < 0:
            raise InvalidTimeout(
                f"timeout must not be negative, got {timeout}s",
                metadata={"timeout": str(timeout)},
            )
        deadline = self._clock() + timeout
        while True:
            result, known = self.evaluate(revision)
            if not known:
                await self._view.confirm_quiet()
                result, known = self.evaluate(revision)
            if result.converged:
                return result
            remaining = deadline - self._clock()
            if remaining <= 0:
                return result
            await self._view.wait_changed(min(remaining, POLL))
