"""The broker's async shell: leadership, the feed, and the wiring of its parts.

:class:`BrokerRuntime` wraps the pure :class:`~drover.broker.core.broker.EvalBroker`
and is the one object that mutates it (one event loop, so no locks). It is
the composition root; each part it wires is a module of its own, given
only what it uses of the runtime (a small Protocol, or callables):

* as a :class:`~drover.broker.feed.FeedSink` it applies the event stream on
  every replica (hot standby on followers);
* as a :class:`~drover.coord.LeaderComponent` it is enabled for a term:
  ``establish`` waits for the barrier (the feed has applied the store's
  evaluation index read after winning), re-reads the scheduler config,
  promotes the standby (``enable``: the old leader's unacked evaluations are
  pending in the store, hence ready here, deliverable at once) and writes
  the cancellations the standby deferred; ``revoke`` drops back to standby,
  kills every token and ends the open long polls with a leader hint
  (:mod:`.leader_hint`);
* it serves workers (its methods are the entry points: they add the leader
  hint, see ``_hinted``): Dequeue long-polls, Nack, OutstandingReset and
  CancelEvaluation are core calls (:mod:`.worker_calls`); Ack and AckBatch
  write the worker's outcome and follow-ups through the fenced writer
  *before* the core forgets the evaluation (:mod:`.ack_calls`; nothing
  lives only in memory; settled once, by :mod:`.core.settlement`);
* one timer task sleeps until ``core.next_deadline()``, woken when an
  operation may have moved it earlier (:mod:`.timers`);
* every core change goes through ``after`` (write its effects, serve parked
  polls, re-arm the timer), every landed txn of the writer through
  ``_written`` (the leader's own updates applied before their echo).

Leader only, at-least-once: worker calls on a replica that is not the
enabled leader raise :class:`~drover.errors.NotLeader` with the leader's
address (``drover-leader`` metadata). "Enabled" is not the guard:
revocation is asynchronous, so every worker call, every hand-out to a long
poll (also one that wakes up), every timer tick and every write checks the
:class:`~drover.coord.guard.LeaderGuard` synchronously right before it
acts: a term past its lease clock (a process frozen and woken) serves
nothing. Delivery tokens carry the term (:mod:`.core.tokens`) and an Ack is
fenced with its token's term, so an outcome of an earlier term's delivery
is refused by the state service (FENCE_LOST).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, ParamSpec, TypeVar

from drover.api.types.v1.evaluation_pb2 import Evaluation
from drover.api.types.v1.scheduler_pb2 import SchedulerConfig
from drover.broker.ack_calls import AckCalls
from drover.broker.config import ShellConfig
from drover.broker.core.broker import BrokerMode, EvalBroker
from drover.broker.core.delivery import Delivery
from drover.broker.core.effects import Effect, WriteGroup, to_writes
from drover.broker.core.settlement import AckLike, AckSettlement
from drover.broker.core.tokens import token_term
from drover.broker.feed import EventFeed
from drover.broker.heartbeats import reap_missed_heartbeats
from drover.broker.leader_hint import LeaderHints
from drover.broker.long_poll import LongPolls
from drover.broker.state_api import BrokerStateApi
from drover.broker.timers import CoreTimer
from drover.broker.worker_calls import WorkerCalls
from drover.broker.writer import FencedWriter
from drover.coord.fence import Fence
from drover.coord.guard import LeaderGuard
from drover.coord.kv import objects_per_txn
from drover.coord.term import Term
from drover.errors import DroverError, NotLeader
from drover.gc_policy import GcPolicy

__all__ = ["BrokerRuntime"]

log = logging.getLogger(__name__)

SERVICE = "broker"
_T = TypeVar("_T")
_P = ParamSpec("_P")
def _hinted(
    fn: Callable[_P, Coroutine[Any, Any, _T]],
) -> Callable[_P, Coroutine[Any, Any, _T]]:
    """A NotLeader without a hint gets one looked up (see LeaderGuard.refusal)."""

    @functools.wraps(fn)
    async def call(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        try:
            return await fn(*args, **kwargs)
        except NotLeader as err:
            if err.leader is not None:
                raise
            runtime = args[0]
            assert isinstance(runtime, BrokerRuntime)
            raise await runtime.guard.refusal(err) from None

    return call


class BrokerRuntime:
    def __init__(
        self,
        api: BrokerStateApi,
        core: EvalBroker,
        *,
        address: str,
        config: ShellConfig,
        clock: Callable[[], float] = time.monotonic,
        gc_policy: GcPolicy | None = None,
    ) -> None:
        self.api = api
        # The process's collector policy (the app's; None leaves it alone).
        self._gc = gc_policy
        self.core = core
        self.config = config
        self._clock = clock
        self.guard = LeaderGuard(SERVICE, clock=clock, hint=lambda: self.hints.leader_address,
                                 hint_term=lambda: self.hints.leader_term)
        self.address = address
        self.feed = EventFeed(api, self)
        self.polls = LongPolls()
        self.term: Term | None = None
        # Tokens this term hands out start with it (see token_fence).
        self._term_prefix = "-"
        self._writer: FencedWriter | None = None
        self._enabled = asyncio.Event()
        self._config_index = -1
        self.hints = LeaderHints(self.polls, own_address=lambda: self.address,
                                 leading=lambda: self._writer is not None,
                                 not_leader=self.not_leader, hint_wait=self.config.hint_wait)
        self.acks = AckSettlement(core)
        self._timer = CoreTimer(core, clock=clock, serving=self._serving, after=self.after)
        self._calls = WorkerCalls(self, core, self.polls, self.guard, self.config, clock=clock)
        self._ack_calls = AckCalls(self, core, self.acks, self.guard)
        if core.mode is BrokerMode.DISABLED:
            core.standby()

    # -- leader address ----------------------------------------------------------

    @property
    def address(self) -> str:
        return self.guard.address

    @address.setter
    def address(self, value: str) -> None:
        self.guard.address = value

    @property
    def leader_address(self) -> str | None:
        """The leader to advertise: elected *and established* (serving)."""
        return self.hints.leader_address

    def observed_leader(self, address: str | None, term: int = 0,
                        established: bool = True) -> None:
        """The election observer saw ``address`` lead (None: nobody) in ``term``."""
        self.hints.observed(address, term, established)

    def not_leader(self) -> NotLeader:
        return self.guard.not_leader()

    @property
    def writer(self) -> FencedWriter | None:
        """The current term's writer; None when not the established leader."""
        return self._writer

    async def writer_for_call(self, wait: float = 0.0) -> FencedWriter:
        """The term's writer, once the term is checked alive (the caller acts
        before its next ``await``)."""
        if self._writer is None and wait > 0 and self.hints.elected_address == self.address:
            # Elected, establishing: serve once enabled rather than bounce.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(wait, self.config.establish_wait)):
                    await self._enabled.wait()
        if self._writer is None:
            raise self.not_leader()
        self.guard.check()
        return self._writer

    def _serving(self) -> bool:
        """May the core hand out or fire leader timers right now (synchronous)?

        A standby core delivers nothing anyway; a leader core only while the
        term is provably alive.
        """
        return self.core.mode is not BrokerMode.LEADER or self.guard.alive()

    # -- feed sink ---------------------------------------------------------------

    def restored(self, evaluations: Sequence[Evaluation]) -> None:
        if self.core.mode is BrokerMode.LEADER and self.term is not None:
            # A re-read under a live term would kill every token while
            # workers hold them: hand the term over instead (a failover).
            self.term.report_lost("the broker's event stream had to re-read the store")
            self.core.standby()
        self.core.restore(evaluations)
        if self._gc is not None:
            self._gc.restored(len(evaluations))
        self.after([])

    def applied(self, updates: Sequence[Evaluation], deleted: Sequence[str]) -> None:
        core = self.core
        effects: list[Effect] = []
        settle = self.acks.on_applied
        for evaluation in updates:
            effects.extend(settle(evaluation))
            effects.extend(core.apply(evaluation))
        for eval_id in deleted:
            core.forget(eval_id)
        if self._gc is not None:
            self._gc.applied(len(updates) + len(deleted))
        self.after(effects)

    def config_changed(self, config: SchedulerConfig) -> None:
        if config.modify_index and config.modify_index < self._config_index:
            return  # an older version than one already seen
        self._config_index = config.modify_index
        if self.core.paused != config.pause_eval_broker:
            log.info("eval broker %s by scheduler config",
                     "paused" if config.pause_eval_broker else "resumed")
        self.core.set_paused(config.pause_eval_broker)
        self.after([])

    # -- leadership --------------------------------------------------------------

    async def establish(self, term: Term) -> None:
        started = self._clock()
        index = await self.api.eval_index()
        await self.feed.wait_applied(index)
        self.config_changed(await self.api.scheduler_config())
        writer = FencedWriter(self.api, term.fence, on_written=self._written,
                              on_fence_lost=term.report_lost, alive=self.guard.alive,
                              max_objects=objects_per_txn(self.config.max_txn_ops))
        term.spawn(writer.run(), name="broker-writer")
        term.spawn(reap_missed_heartbeats(self.api, term, self.guard.alive,
                                          self.config.heartbeat_check_interval),
                   name="broker-heartbeats")
        self.term = term
        self._term_prefix = f"{term.revision}."
        self._writer = writer
        self.guard.enable(term)
        effects = self.core.enable(term.revision)
        self._enabled.set()
        log.info("eval broker enabled for term %d in %.3fs (barrier index %d, %d ready)",
                 term.revision, self._clock() - started, index, self.core.stats().total_ready)
        self.after(effects)

    async def revoke(self) -> None:
        self.guard.disable()
        self._enabled.clear()
        writer, self._writer = self._writer, None
        self.term = None
        if writer is not None:
            writer.close(self.not_leader())
        if self.core.mode is BrokerMode.LEADER:
            self.core.standby()
        self.hints.stepped_down()

    async def drain_polls(self) -> None:
        """Shutdown: end every open poll (with a hint if one comes in time)."""
        await self.hints.drain_polls()

    # -- workers -----------------------------------------------------------------

    def poll_timeout(self, requested: float | None) -> float:
        return self._calls.poll_timeout(requested)

    @_hinted
    async def dequeue(self, schedulers: Sequence[str], wait: float,
                      limit: int = 1) -> list[Delivery]:
        """Up to ``limit`` deliveries; waits at most ``wait`` for the first only.

        The rest are what else is ready once the first is in hand (still one
        per job): a batch never waits to fill up.
        """
        return await self._calls.dequeue(schedulers, wait, limit)

    @_hinted
    async def ack(self, ack: AckLike) -> int:
        """Write the worker's outcome, then settle it; its store index."""
        return await self._ack_calls.write_outcome(ack)

    def token_fence(self, token: str) -> Fence | None:
        term = self.term
        if term is None or token.startswith(self._term_prefix):
            return None  # this term's own delivery (the common case, no parse)
        issued = token_term(token)
        if issued in (0, term.revision):
            return None
        return Fence(term.leader_key, issued)

    @_hinted
    async def ack_batch(self, acks: Sequence[AckLike]) -> list[int | DroverError]:
        """Each ack's store index, or the error Ack alone would have raised.

        The acks' writes are queued at one moment (one check of the term,
        no task or future per ack) and join one group commit (as few txns
        as fit); each succeeds or fails on its own. Not being the leader
        fails the whole call, so a caller is pointed at the leader once.
        """
        return await self._ack_calls.write_outcomes(acks)

    @_hinted
    async def nack(self, eval_id: str, token: str) -> None:
        await self._calls.give_back(eval_id, token)

    @_hinted
    async def outstanding_reset(self, eval_id: str, token: str) -> None:
        await self._calls.outstanding_reset(eval_id, token)

    @_hinted
    async def cancel(self, eval_id: str, reason: str) -> int:
        return await self._calls.cancel(eval_id, reason)

    @_hinted
    async def require_leader(self) -> None:
        await self.writer_for_call()

    # -- plumbing ----------------------------------------------------------------

    def _written(self, groups: Sequence[WriteGroup], index: int) -> None:
        """The writer landed ``groups`` in one txn at store ``index``."""
        leader = self.core.mode is BrokerMode.LEADER
        if not leader:
            return
        bodies: list[Evaluation] = []
        failed: list[str] = []
        for group in groups:
            for body in group.evaluations:
                # Stamped in place: a written body belongs to its write (see
                # WriteGroup), and nothing else reads it once written.
                body.modify_index = index
                bodies.append(body)
            if group.failed:
                failed.append(group.failed)
        if bodies:
            # Our own updates, applied now rather than when the stream echoes
            # them: a later update of the same evaluation (an Ack after an
            # unblock) must compare on the index this one produced.
            self.applied(bodies, [])
        if failed:
            for eval_id in failed:
                with contextlib.suppress(DroverError):
                    self.core.release_failed(eval_id)
            self.after([])

    def after(self, effects: list[Effect]) -> None:
        """After any core change: write its effects, serve waiters, re-arm the timer."""
        if effects:
            groups = to_writes(effects)
            if self._writer is not None:
                self._writer.submit(groups)
            else:
                log.warning("eval broker: %d effect(s) with no writer; the next leader "
                            "re-derives them", len(effects))
        if self.polls and self._serving():
            self.polls.dispatch(self.core.ready_schedulers, self.core.dequeue)
        self.poke_timer()

    def poke_timer(self) -> None:
        """The core's next deadline may have moved earlier."""
        self._timer.poke()

    async def run_timers(self) -> None:
        """Fire the core's timers (nack timeouts, delays) for the process lifetime."""
        await self._timer.run()
