"""The leadership loop: campaign, hold, hand notices to leader components.

Two tasks, decoupled by a drop-but-last channel (:mod:`.latest`):

* the *campaigner* opens a session, campaigns, and while leading watches
  for the end of the term: session unsafe (no renewal for 2/3 of the TTL),
  own key gone, a fenced write failed (``Term.report_lost``), leader work
  crashed, or resign. It then cancels the term's task group at once (leader
  work stops before any further write), publishes ``None``, deletes the key
  if still ours and revokes the lease, and campaigns again on a new session.
  It never waits for the components: publishing cannot block.
* the *actuator* reads the latest notice and applies :func:`.decide.decide`:
  establish / revoke / revoke-then-establish / warn-and-do-nothing. Every
  ``establish`` and ``revoke`` runs under a deadline; a failed or timed-out
  establish revokes and gives the term up (another replica gets a chance).
  Before establishing it re-confirms, with a linearizable read, that our key
  still exists and is lowest.

Guarantees: components are enabled on at most the replica etcd names leader
(modulo the fence for paused processes), never for a term already known to
be over, and always see ``revoke`` before a new ``establish``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from drover.coord.clock import Clock, monotonic
from drover.coord.decide import Action, decide
from drover.coord.election import Election, ElectionKV, observe
from drover.coord.errors import EtcdUnavailable, NotCandidate, SessionLost
from drover.coord.keys import Keyspace
from drover.coord.kv import Leases
from drover.coord.latest import LatestChannel
from drover.coord.session import ACT_FRACTION, Session, election_warning
from drover.coord.term import LeaderComponent, Term
from drover.tasks import cancel_and_wait

__all__ = ["Leadership", "LeadershipConfig", "LeadershipKV"]

log = logging.getLogger(__name__)


class LeadershipKV(ElectionKV, Leases, Protocol):
    """What campaigning needs: sessions (leases) and the election's reads,
    txns and watches. :class:`~drover.coord.etcd_kv.EtcdKV` on the control
    client, or :class:`~drover.coord.memkv.MemoryKV` in tests."""


@dataclass(frozen=True)
class LeadershipConfig:
    ttl: int = 10
    establish_timeout: float = 10.0
    revoke_timeout: float = 5.0
    retry_backoff: float = 0.5
    act_fraction: float = ACT_FRACTION
    etcd_timeout: float = 5.0


class _WorkScope:
    """The term's one task group. ``cancel`` stops all leader work, bounded."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.lost = asyncio.Event()
        self.lost_reason = ""
        self._tg: asyncio.TaskGroup | None = None
        self._ready = asyncio.Event()
        self._cancelled = False
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.task = asyncio.create_task(self._hold(), name=f"leader-work-{self.name}")
        await self._ready.wait()

    async def _hold(self) -> None:
        async with asyncio.TaskGroup() as tg:
            self._tg = tg
            self._ready.set()
            await asyncio.get_running_loop().create_future()

    @property
    def ended(self) -> bool:
        return self._cancelled or self.lost.is_set()

    def spawn(self, coro: Coroutine[Any, Any, Any], *, name: str | None = None) -> Any:
        if self.ended or self._tg is None:
            coro.close()
            raise SessionLost(f"term {self.name} has ended; no new leader work")
        return self._tg.create_task(coro, name=name)

    def report_lost(self, reason: str) -> None:
        if not self.lost.is_set():
            self.lost_reason = reason
            self.lost.set()

    async def cancel(self, grace: float) -> None:
        self._cancelled = True
        if self.task is None:
            return
        self.task.cancel()
        done, _ = await asyncio.wait({self.task}, timeout=grace)
        if not done:
            log.error("leader work of %s ignored cancellation for %.1fs", self.name, grace)
        elif not self.task.cancelled() and self.task.exception() is not None:
            log.error("leader work of %s failed", self.name, exc_info=self.task.exception())


class Leadership:
    """Campaign for ``service`` and drive ``components`` (see module doc)."""

    def __init__(self, kv: LeadershipKV, keyspace: Keyspace, service: str, address: str,
                 components: Sequence[LeaderComponent] = (), *,
                 config: LeadershipConfig | None = None, clock: Clock = monotonic) -> None:
        self.kv = kv
        self.keyspace = keyspace
        self.service = service
        self.address = address
        self.components = tuple(components)
        self.config = config or LeadershipConfig()
        warning = election_warning(self.config.ttl, self.config.act_fraction)
        if warning:
            log.warning("%s leadership: %s", service, warning)
        self.clock = clock
        self.notices: LatestChannel[Term | None] = LatestChannel(None)
        self._acted: Term | None = None
        self._election: Election | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        self._stop = asyncio.Event()
        self._scope: _WorkScope | None = None
        self._task: asyncio.Task[None] | None = None
        # Terms acted on (established) and given up (revoked), for metrics.
        self.gained = 0
        self.lost = 0

    @property
    def term(self) -> Term | None:
        """The term the components act on (None: not acting as leader)."""
        return self._acted

    @property
    def is_leader(self) -> bool:
        t = self._acted
        return t is not None and not t.ended

    def start(self) -> asyncio.Task[None]:
        self._task = asyncio.create_task(self.run(), name=f"leadership-{self.service}")
        return self._task

    def _observations(self) -> list[tuple[str, Any]]:
        term = self._acted
        attrs = {"service": self.service}
        return [
            ("leader", [(1 if self.is_leader else 0, attrs)]),
            ("term", [(term.revision if term is not None else 0, attrs)]),
            ("transitions", [(self.gained, {**attrs, "direction": "gained"}),
                             (self.lost, {**attrs, "direction": "lost"})]),
        ]

    def _register_metrics(self) -> list[Any]:
        from drover.telemetry.observed import observe

        def reader(which: str) -> Any:
            return lambda: dict(self._observations())[which]

        return [
            observe("drover.leadership.is_leader", reader("leader"), unit="1",
                    description="1 while this replica acts as its service's leader"),
            observe("drover.leadership.term", reader("term"), unit="1",
                    description="the election revision of the term acted on (0: none)"),
            observe("drover.leadership.transitions", reader("transitions"), kind="counter",
                    unit="{transition}",
                    description="terms established (gained) and revoked (lost)"),
        ]

    def step_down(self, reason: str = "step down requested") -> None:
        """End the current term (if any) and campaign again on a new session."""
        if self._scope is not None:
            self._scope.report_lost(reason)

    async def resign(self, grace: float = 5.0) -> None:
        """Cancel leader work, revoke components, delete our key, revoke the
        lease, stop campaigning. Bounded by ``grace`` plus the revoke deadline."""
        self._stop.set()
        if self._task is not None:
            await asyncio.wait({self._task}, timeout=grace + self.config.revoke_timeout)

    async def run(self) -> None:
        actuator = asyncio.create_task(self._actuate(), name=f"leader-actuator-{self.service}")
        unregister = self._register_metrics()
        try:
            await self._campaign_forever()
        finally:
            for close in unregister:
                close()
            await self._wait_idle()
            await cancel_and_wait((actuator,), within=self.config.revoke_timeout,
                                  what=f"{self.service} leadership stop")
            if self._acted is not None:
                await self._revoke_all()

    async def _wait_idle(self) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.config.revoke_timeout):
                await self._idle.wait()

    async def _campaign_forever(self) -> None:
        cfg = self.config
        while not self._stop.is_set():
            try:
                session = await Session.open(self.kv, cfg.ttl, clock=self.clock,
                                             act_fraction=cfg.act_fraction)
            except EtcdUnavailable as e:
                log.warning("%s: cannot open an etcd session: %s", self.service, e)
                await self._sleep(cfg.retry_backoff)
                continue
            try:
                await self._one_session(session)
            finally:
                await session.close(grace=cfg.revoke_timeout)
            if not self._stop.is_set():
                await self._sleep(cfg.retry_backoff)

    async def _sleep(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._stop.wait()

    async def _until_stop(self, coro: Coroutine[Any, Any, Term]) -> Term | None:
        """``coro``'s result, or None if stopped first (or it ignored its
        cancel past ``revoke_timeout``: logged, and treated as stopped)."""
        task = asyncio.ensure_future(coro)
        stop = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            await cancel_and_wait((task,), within=self.config.revoke_timeout,
                                  what=f"{self.service} campaign stop")
        return task.result() if task.done() and not task.cancelled() else None

    async def _one_session(self, session: Session) -> None:
        cfg = self.config
        election = Election(self.kv, self.keyspace, self.service, session,
                            address=self.address, timeout=cfg.etcd_timeout)
        self._election = election
        try:
            won = await self._until_stop(election.campaign())
        except (SessionLost, NotCandidate, EtcdUnavailable) as e:
            log.warning("%s: campaign ended: %s", self.service, e)
            await election.resign(rpc_timeout=cfg.etcd_timeout)
            return
        if won is None:  # resigned while campaigning
            await election.resign(rpc_timeout=cfg.etcd_timeout)
            return
        scope = _WorkScope(f"{self.service}@{won.revision}")
        await scope.start()
        term = replace(won, scope=scope, lease=session)
        self._scope = scope
        log.info("%s: won leadership, term %d at revision %d", self.service, term.revision,
                 term.won_at_revision)
        self.notices.publish(term)
        try:
            reason = await self._hold(election, session, term, scope)
        finally:
            await scope.cancel(cfg.revoke_timeout)
            self._scope = None
            self.notices.publish(None)
        log.warning("%s: leadership term %d ended: %s", self.service, term.revision, reason)
        await self._wait_idle()
        await election.resign(term, rpc_timeout=cfg.etcd_timeout)

    async def _hold(self, election: Election, session: Session, term: Term,
                    scope: _WorkScope) -> str:
        assert scope.task is not None
        waits: dict[asyncio.Future[Any], str] = {
            asyncio.ensure_future(session.unsafe.wait()): "session lost",
            asyncio.ensure_future(election.wait_key_gone(term)): "",
            asyncio.ensure_future(scope.lost.wait()): "",
            asyncio.ensure_future(self._stop.wait()): "resigned",
            scope.task: "leader work failed",
        }
        try:
            done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for fut in waits:
                if fut is not scope.task:
                    fut.cancel()
        fut = next(iter(done))
        if scope.lost.is_set():
            return scope.lost_reason
        if fut is scope.task:
            return "leader work failed"
        if waits[fut] == "session lost":
            return f"session lost ({session.lost_reason or 'no renewal for 2/3 of TTL'})"
        if not fut.cancelled() and fut.exception() is None and isinstance(fut.result(), str):
            return str(fut.result())
        if not fut.cancelled() and fut.exception() is not None:
            return f"cannot confirm leader key: {fut.exception()!r}"
        return waits[fut]

    async def _actuate(self) -> None:
        seen = 0
        while True:
            got = await self.notices.wait_newer(seen)
            seen = got.version
            action = decide(self._acted, got.value, got.missed)
            if action is Action.WARN_NOTHING:
                log.warning("%s: leadership was gained and lost before acting on it "
                            "(%d notices dropped); doing nothing", self.service, got.missed)
            elif action is Action.REVOKE:
                await self._revoke_all()
            elif action is Action.REVOKE_THEN_ESTABLISH:
                log.warning("%s: leadership was lost and regained (term %s -> %s); "
                            "revoking fully, then establishing anew", self.service,
                            self._acted.revision if self._acted else None,
                            got.value.revision if got.value else None)
                await self._revoke_all()
                assert got.value is not None
                await self._establish_all(got.value)
            elif action is Action.ESTABLISH:
                assert got.value is not None
                await self._establish_all(got.value)

    async def _confirmed(self, term: Term) -> bool:
        try:
            info = await observe(self.kv, self.keyspace, self.service,
                                 rpc_timeout=self.config.etcd_timeout)
        except EtcdUnavailable as e:
            log.warning("%s: cannot confirm leadership: %s", self.service, e)
            return False
        return info is not None and (info.leader_key, info.term) == (term.leader_key,
                                                                     term.revision)

    async def _establish_all(self, term: Term) -> None:
        if term.ended or not await self._confirmed(term) or term.ended:
            log.warning("%s: term %d is over before establishing; not acting",
                        self.service, term.revision)
            term.report_lost("not confirmed as leader before acting")
            return
        self._acted = term
        self._idle.clear()
        for comp in self.components:
            try:
                async with asyncio.timeout(self.config.establish_timeout):
                    await comp.establish(term)
            except Exception as e:  # TimeoutError included: a failed establish
                log.error("%s: establish of %s failed for term %d: %r; giving the term up",
                          self.service, type(comp).__name__, term.revision, e)
                await self._revoke_all()
                term.report_lost(f"establish of {type(comp).__name__} failed: {e!r}")
                return
        self.gained += 1
        election = self._election
        if election is not None and election.key == term.leader_key and term.scope is not None:
            term.scope.spawn(self._advertise(election, term), name=f"advertise-{term.revision}")

    async def _advertise(self, election: Election, term: Term) -> None:
        """Mark the term established in etcd, so replicas start pointing
        clients here (retried until it is written or the term ends)."""
        while not term.ended:
            try:
                await election.mark_established(term, rpc_timeout=self.config.etcd_timeout)
                return
            except EtcdUnavailable as e:
                log.info("%s: cannot mark term %d established yet: %s", self.service,
                         term.revision, e)
                await asyncio.sleep(self.config.retry_backoff)

    async def _revoke_all(self) -> None:
        for comp in reversed(self.components):
            try:
                async with asyncio.timeout(self.config.revoke_timeout):
                    await comp.revoke()
            except Exception as e:
                log.error("%s: revoke of %s failed: %r", self.service, type(comp).__name__, e)
        if self._acted is not None:
            self.lost += 1
        self._acted = None
        self._idle.set()
