"""The broker's async shell: leadership, the feed, long polls, timers, writes.

:class:`BrokerRuntime` wraps the pure :class:`~drover.broker.core.EvalBroker`
and is the one object that mutates it (one event loop, so no locks):

* as a :class:`~drover.broker.feed.FeedSink` it applies the event stream on
  every replica (hot standby on followers);
* as a :class:`~drover.coord.LeaderComponent` it is enabled for a term:
  ``establish`` waits for the barrier (the feed has applied the store's
  evaluation index read after winning), re-reads the scheduler config,
  promotes the standby (``enable``: the old leader's unacked evaluations are
  pending in the store, hence ready here, deliverable at once) and writes
  the cancellations the standby deferred; ``revoke`` drops back to standby,
  kills every token and ends the open long polls with a leader hint;
* it serves workers: Dequeue long-polls (:mod:`.long_poll`), Ack writes the
  worker's outcome and follow-ups through the fenced writer *before* the
  core forgets the evaluation (nothing lives only in memory; settled once,
  by :mod:`.settlement`), Nack and
  OutstandingReset are pure core calls;
* one timer task sleeps until ``core.next_deadline()``, woken when an
  operation may have moved it earlier.

Leader only, at-least-once: worker calls on a replica that is not the
enabled leader raise :class:`~drover.errors.NotLeader` with the leader's
address (``drover-leader`` metadata). "Enabled" is not the guard:
revocation is asynchronous, so every worker call, every hand-out to a long
poll (also one that wakes up), every timer tick and every write checks the
:class:`~drover.coord.guard.LeaderGuard` synchronously right before it
acts: a term past its lease clock (a process frozen and woken) serves
nothing. Delivery tokens carry the term (:mod:`.tokens`) and an Ack is
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
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from drover.api.types.v1.evaluation_pb2 import Evaluation
from drover.api.types.v1.scheduler_pb2 import SchedulerConfig
from drover.broker.core import BrokerMode, Delivery, EvalBroker
from drover.broker.effects import Effect, WriteGroup, to_writes
from drover.broker.errors import BrokerDisabled
from drover.broker.feed import EventFeed
from drover.broker.long_poll import LongPolls
from drover.broker.settlement import AckItem, AckLike, AckSettlement, ack_body, final_status
from drover.broker.state_api import BrokerStateApi
from drover.broker.tokens import token_term
from drover.broker.writer import FencedWriter
from drover.coord.fence import Fence
from drover.coord.guard import LeaderGuard
from drover.coord.term import Term
from drover.errors import DroverError, InvalidArgument, NotLeader
from drover.gc_policy import GcPolicy

__all__ = ["AckItem", "AckLike", "BrokerRuntime", "ShellConfig"]

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


@dataclass(frozen=True, slots=True)
class ShellConfig:
    # Dequeue long-poll bounds (seconds): unset timeout, and the cap.
    default_poll: float = 5.0
    max_poll: float = 60.0
    # How long a Dequeue on the freshly elected (not yet established)
    # replica waits for it to serve before pointing elsewhere.
    establish_wait: float = 2.0
    # On resign, how long open polls wait to learn the next leader's address.
    hint_wait: float = 1.0
    # The most evaluations one Dequeue hands out, and acks one AckBatch takes.
    max_batch: int = 256
    # etcd's --max-txn-ops as the state service is told it (raise the two
    # together): the writer's txns carry at most this less one evaluations
    # (the state's revision marker). A state replica told less refuses a
    # bigger write naming its cap, and the writer shrinks to that.
    max_txn_ops: int = 128

    def __post_init__(self) -> None:
        if self.max_txn_ops < 4:
            raise ValueError(f"max_txn_ops must be at least 4, got {self.max_txn_ops}")


class BrokerRuntime:
    def __init__(
        self,
        api: BrokerStateApi,
        core: EvalBroker,
        *,
        address: str,
        config: ShellConfig | None = None,
        clock: Callable[[], float] = time.monotonic,
        gc_policy: GcPolicy | None = None,
    ) -> None:
        self.api = api
        # The process's collector policy (the app's; None leaves it alone).
        self._gc = gc_policy
        self.core = core
        self.config = config or ShellConfig()
        self._clock = clock
        self.guard = LeaderGuard(SERVICE, clock=clock, hint=lambda: self.leader_address,
                                 hint_term=lambda: self.leader_term)
        self.address = address
        self.feed = EventFeed(api, self)
        self.polls = LongPolls()
        self.term: Term | None = None
        # Tokens this term hands out start with it (see _token_fence).
        self._term_prefix = "-"
        #: The leader to advertise: elected *and established* (serving).
        self.leader_address: str | None = None
        self.leader_term = 0
        #: Who holds the election key, established or not.
        self.elected_address: str | None = None
        self._writer: FencedWriter | None = None
        self._enabled = asyncio.Event()
        self._leader_seen = asyncio.Event()
        self._config_index = -1
        self._timer_wake = asyncio.Event()
        self._timer_target: float | None = None
        self._ending: asyncio.Future[None] | None = None
        self.acks = AckSettlement(core)
        if core.mode is BrokerMode.DISABLED:
            core.standby()

    # -- leader address ----------------------------------------------------------

    @property
    def address(self) -> str:
        return self.guard.address

    @address.setter
    def address(self, value: str) -> None:
        self.guard.address = value

    def observed_leader(self, address: str | None, term: int = 0,
                        established: bool = True) -> None:
        """The election observer saw ``address`` lead (None: nobody) in
        ``term``; hints name it only once it has ``established``, so clients
        are never sent to a leader still restoring (they would bounce)."""
        self.elected_address = address
        self.leader_address = address if established else None
        self.leader_term = term if established and address else 0
        self._leader_seen.set()
        self._leader_seen = asyncio.Event()

    def not_leader(self) -> NotLeader:
        return self.guard.not_leader()

    async def _writer_for_call(self, wait: float = 0.0) -> FencedWriter:
        """The term's writer, once the term is checked alive (the caller acts
        before its next ``await``)."""
        if self._writer is None and wait > 0 and self.elected_address == self.address:
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
        self._after([])

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
        self._after(effects)

    def config_changed(self, config: SchedulerConfig) -> None:
        if config.modify_index and config.modify_index < self._config_index:
            return  # an older version than one already seen
        self._config_index = config.modify_index
        if self.core.paused != config.pause_eval_broker:
            log.info("eval broker %s by scheduler config",
                     "paused" if config.pause_eval_broker else "resumed")
        self.core.set_paused(config.pause_eval_broker)
        self._after([])

    # -- leadership --------------------------------------------------------------

    async def establish(self, term: Term) -> None:
        started = self._clock()
        index = await self.api.eval_index()
        await self.feed.wait_applied(index)
        self.config_changed(await self.api.scheduler_config())
        writer = FencedWriter(self.api, term.fence, on_written=self._written,
                              on_fence_lost=term.report_lost, alive=self.guard.alive,
                              max_objects=self.config.max_txn_ops - 1)
        term.spawn(writer.run(), name="broker-writer")
        self.term = term
        self._term_prefix = f"{term.revision}."
        self._writer = writer
        self.guard.enable(term)
        effects = self.core.enable(term.revision)
        self._enabled.set()
        log.info("eval broker enabled for term %d in %.3fs (barrier index %d, %d ready)",
                 term.revision, self._clock() - started, index, self.core.stats().total_ready)
        self._after(effects)

    async def revoke(self) -> None:
        self.guard.disable()
        self._enabled.clear()
        writer, self._writer = self._writer, None
        self.term = None
        if writer is not None:
            writer.close(self.not_leader())
        if self.core.mode is BrokerMode.LEADER:
            self.core.standby()
        if len(self.polls):
            self._ending = asyncio.ensure_future(self._end_polls())

    async def drain_polls(self) -> None:
        """Shutdown: end every open poll (with a hint if one comes in time)."""
        ending = self._ending
        if ending is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(self.config.hint_wait + 0.5):
                    await ending
        self.polls.fail_all(self.not_leader())

    async def _end_polls(self) -> None:
        """End open polls with the next leader's address once it is known (bounded)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.config.hint_wait):
                while self.leader_address in (None, self.address) and self._writer is None:
                    await self._leader_seen.wait()
        if self._writer is None:
            self.polls.fail_all(self.not_leader())

    # -- workers -----------------------------------------------------------------

    def poll_timeout(self, requested: float | None) -> float:
        if requested is None:
            return self.config.default_poll
        if requested < 0:
            raise InvalidArgument(f"timeout must not be negative, got {requested}s",
                                  metadata={"field": "timeout"})
        return min(requested, self.config.max_poll)

    @_hinted
    async def dequeue(self, schedulers: Sequence[str], wait: float,
                      limit: int = 1) -> list[Delivery]:
        """Up to ``limit`` deliveries; waits at most ``wait`` for the first only.

        The rest are what else is ready once the first is in hand (still one
        per job): a batch never waits to fill up.
        """
        if not schedulers or any(not s for s in schedulers):
            raise InvalidArgument("schedulers must name at least one scheduler type, "
                                  "none empty", metadata={"field": "schedulers"})
        started = self._clock()
        await self._writer_for_call(wait)
        wait -= self._clock() - started
        first = self._core_call(lambda: self.core.dequeue(schedulers))
        if first is None and wait > 0:
            waiter = self.polls.park(schedulers)
            try:
                first = await self.polls.wait(waiter, wait)
            except asyncio.CancelledError:
                self._give_back(waiter.future)
                raise
            if first is not None and not self.guard.alive():
                # Handed out just before a freeze, resumed after it: the
                # term is over, so this delivery never leaves.
                self._give_back(waiter.future)
                raise self.not_leader()
            if first is None and (self._writer is None or not self.guard.alive()):
                # The term ended while this poll waited and nothing ended it
                # (it parked as the term was revoked): the worker is told
                # to go elsewhere, not handed an empty answer.
                raise self.not_leader()
        self._poke_timer()
        if first is None:
            return []
        batch = [first]
        if limit > 1 and self._writer is not None and self.guard.alive():
            batch += self.core.dequeue_many(schedulers, limit - 1)
        return batch

    def _give_back(self, future: asyncio.Future[Delivery]) -> None:
        if future.done() and not future.cancelled() and future.exception() is None:
            d = future.result()
            with contextlib.suppress(DroverError):
                self._after(self.core.nack(d.evaluation.id, d.token))

    @_hinted
    async def ack(
        self,
        eval_id: str,
        token: str,
        status: int = 0,
        description: str = "",
        follow_ups: Sequence[Evaluation] = (),
    ) -> int:
        writer = await self._writer_for_call()
        group, fence = self._begin_ack(AckItem(eval_id, token, status, description,
                                               list(follow_ups)))
        try:
            written = writer.enqueue(group, fence)
        except DroverError:
            self.acks.written(eval_id, token)
            raise
        try:
            index = await written
        finally:
            still_ours = self.acks.written(eval_id, token)
        if still_ours:
            if self._writer is not writer:
                raise self.not_leader()
            self._after(self.acks.settle(eval_id, token))
        return index

    def _begin_ack(self, ack: AckLike) -> tuple[WriteGroup, Fence | None]:
        """Check an ack and mark it in flight (synchronous: checked and
        queued at one moment of the term); the write to queue and its fence."""
        final = final_status(ack.status)
        try:
            held = self.core.check_outstanding(ack.eval_id, ack.token)
        except BrokerDisabled:
            raise self.not_leader() from None
        body = ack_body(held, final, ack.status_description)
        # An update of what was handed out (compared on its modify_index:
        # never re-created if deleted meanwhile), fenced with the term the
        # delivery was made under; follow-ups are creates of new ids.
        follow_ups = ack.follow_ups
        group = WriteGroup((body,), creates=tuple(follow_ups) if follow_ups else ())
        # The stream may bring this write back before the call returns; it
        # then acks the core itself (see ``applied``), else the caller does.
        self.acks.begin(ack.eval_id, ack.token)
        return group, self._token_fence(ack.token)

    def _token_fence(self, token: str) -> Fence | None:
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
        writer = await self._writer_for_call()
        outcomes: list[int | DroverError] = [0] * len(acks)
        queued: list[tuple[int, AckLike]] = []
        writes: list[tuple[WriteGroup, Fence | None]] = []
        for i, ack in enumerate(acks):
            try:
                writes.append(self._begin_ack(ack))
            except DroverError as err:
                outcomes[i] = err
                continue
            queued.append((i, ack))
        if queued:
            try:
                written = writer.enqueue_all(writes)
            except DroverError as err:
                for i, ack in queued:
                    self.acks.written(ack.eval_id, ack.token)
                    outcomes[i] = err
                queued = []
        if queued:
            try:
                results = await written
            except BaseException:
                # Cancelled: the writes stand or fail on their own; the stream
                # settles the ones that land.
                for _, ack in queued:
                    self.acks.written(ack.eval_id, ack.token)
                written.cancel()
                raise
            effects: list[Effect] = []
            settled = False
            for (i, ack), result in zip(queued, results, strict=True):
                still_ours = self.acks.written(ack.eval_id, ack.token)
                if isinstance(result, DroverError):
                    outcomes[i] = result
                    continue
                if still_ours:
                    if self._writer is not writer:
                        outcomes[i] = self.not_leader()
                        continue
                    effects.extend(self.acks.settle(ack.eval_id, ack.token))
                    settled = True
                outcomes[i] = result
            if settled:
                self._after(effects)
        for i, outcome in enumerate(outcomes):
            if isinstance(outcome, NotLeader) and outcome.leader is None:
                outcomes[i] = await self.guard.refusal(outcome)
        return outcomes

    @_hinted
    async def nack(self, eval_id: str, token: str) -> None:
        await self._writer_for_call()
        self._after(self._core_call(lambda: self.core.nack(eval_id, token)))

    @_hinted
    async def outstanding_reset(self, eval_id: str, token: str) -> None:
        await self._writer_for_call()
        self._core_call(lambda: self.core.outstanding_reset(eval_id, token))
        self._poke_timer()

    @_hinted
    async def cancel(self, eval_id: str, reason: str) -> int:
        writer = await self._writer_for_call()
        effects = self._core_call(lambda: self.core.cancel(eval_id, reason))
        groups = to_writes(effects)
        try:
            index = await writer.write(groups[0]) if groups else 0
        except DroverError:
            # Released in memory already: keep retrying in the background.
            writer.submit(groups)
            raise
        self._after([])
        return index

    @_hinted
    async def require_leader(self) -> None:
        await self._writer_for_call()

    def _core_call(self, call: Callable[[], _T]) -> _T:
        try:
            return call()
        except BrokerDisabled:
            raise self.not_leader() from None

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
            self._after([])

    def _after(self, effects: list[Effect]) -> None:
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
        self._poke_timer()

    def _poke_timer(self) -> None:
        deadline = self.core.next_deadline()
        target = self._timer_target
        if deadline is not None and (target is None or deadline < target):
            self._timer_wake.set()

    async def run_timers(self) -> None:
        """Fire the core's timers (nack timeouts, delays) for the process lifetime."""
        while True:
            self._timer_wake.clear()
            deadline = self.core.next_deadline()
            self._timer_target = deadline
            if deadline is None:
                await self._timer_wake.wait()
                continue
            delay = deadline - self._clock()
            if delay > 0:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(delay):
                        await self._timer_wake.wait()
                continue
            self._timer_target = None
            if not self._serving():
                # Past the lease clock: fire nothing (nack timeouts, delays)
                # until the term has ended and the core is a standby.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(0.05):
                        await self._timer_wake.wait()
                continue
            self._after(self.core.tick())
