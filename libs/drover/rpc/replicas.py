"""Every replica of a backend, not the first address: spread calls, fail over.

A client of the state service (the eval broker, the deployment watcher)
used to dial ``--state-address``'s first entry, or one replica picked at
start, for its whole life: one replica's failure was the client's, and a
Kubernetes ClusterIP pinned its one HTTP/2 connection to one pod. Now:

* :class:`ReplicaChooser` (pure, clock passed in) holds the known replica
  addresses: the ones membership lists (``<root>/v1/members/<service>/``,
  the proxy's source) or, while membership lists none, the seed addresses
  (``--state-address``: a seed and an override, never the only truth). It
  picks round-robin among replicas not held down; a replica a call failed
  on (UNAVAILABLE, deadline) is held down for a while and the next pick
  moves on. When every replica is held down it picks the one whose hold
  ends first (never "no replica": a call must still be attempted).
* :class:`ReplicaPool` is its shell: one channel per address (closed when
  the address leaves), :meth:`ReplicaPool.discover` learns the replicas
  membership lists at start (UNAVAILABLE when none is known: no seed and
  none registered) and :meth:`ReplicaPool.follow` keeps the address set
  current from an etcd membership watch.
* :func:`state_replicas` is the one wiring of the state service's pool for
  the services that call it (the eval broker, the deployment watcher):
  ``--state-address`` as the seeds, the server's TLS and identity on every
  channel.

Whether a failed call is *retried* on the next replica is the caller's
decision (reads are safe to repeat; a write whose outcome is unknown is
not): the pool only says where to go next.

Silence is bounded like the proxy's (:mod:`drover.rpc.hold`): every call
the pool makes (:meth:`ReplicaPool.read`, :meth:`ReplicaPool.once`) is an
attempt on its replica; a replica that shows no life for ``hold`` seconds
(``--hold-timeout``, default 3 s: a frozen process keeps its sockets open,
so nothing fails) is pinged, and if the ping gets no answer its attempts
end there: a read moves on to the next replica, a write is
UNAVAILABLE ``OUTCOME_UNKNOWN`` (:class:`~drover.rpc.hold.HoldOutcomeUnknown`),
and the replica is held down. Without this, a call waited its whole
deadline (10 s) on a frozen replica.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeVar

import grpc

from drover.api.state.v1 import state_pb2_grpc
from drover.config import ServeSettings, TlsFiles
from drover.coord.clock import Clock, monotonic
from drover.coord.keys import Keyspace
from drover.coord.kv import Ranges
from drover.coord.membership import list_members, watch_members
from drover.coord.watch import WatchKV
from drover.errors import Unavailable
from drover.rpc.channels import channel
from drover.rpc.hold import (
    DEFAULT_HOLD,
    AttemptEnded,
    HoldOutcomeUnknown,
    Holds,
    HoldTimeout,
    Probe,
    health_probe,
)
from drover.rpc.propagation import TokenSource

__all__ = ["FAILOVER_CODES", "STATE_SERVICE", "ReplicaChooser", "ReplicaPool", "state_replicas"]

log = logging.getLogger(__name__)

_T = TypeVar("_T")
#: The state service's name in membership.
STATE_SERVICE = "state"
HOLD_DOWN = 2.0
#: How long the channel of a replica that left stays open for the calls it
#: may still carry: longer than any unary call of a drover service, and than
#: keepalive needs to end a stream to a dead peer (~40 s).
RETIRE_AFTER = 120.0
#: A call that ended so says nothing about the request, only the replica.
FAILOVER_CODES = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})


class ReplicaChooser:
    """Which replica the next call goes to (pure)."""

    def __init__(self, seeds: Sequence[str] = (), *, clock: Clock = monotonic,
                 hold_down: float = HOLD_DOWN) -> None:
        self._seeds = tuple(dict.fromkeys(a for a in seeds if a))
        self._members: tuple[str, ...] = ()
        self._clock = clock
        self._hold_down = hold_down
        self._held: dict[str, float] = {}
        self._turn = itertools.count()

    @property
    def addresses(self) -> tuple[str, ...]:
        """Membership's replicas, or the seeds while membership lists none."""
        return self._members or self._seeds

    def set_members(self, addresses: Iterable[str]) -> None:
        self._members = tuple(sorted(set(a for a in addresses if a)))
        live = set(self.addresses)
        self._held = {a: t for a, t in self._held.items() if a in live}

    def failed(self, address: str) -> None:
        """A call on ``address`` failed in a way another replica may not."""
        if address in self.addresses:
            self._held[address] = self._clock() + self._hold_down

    def succeeded(self, address: str) -> None:
        self._held.pop(address, None)

    def pick(self) -> str | None:
        """The next replica (round-robin over the ones not held down)."""
        addresses = self.addresses
        if not addresses:
            return None
        now = self._clock()
        ready = [a for a in addresses if self._held.get(a, 0.0) <= now]
        if not ready:
            return min(addresses, key=lambda a: self._held.get(a, 0.0))
        return ready[next(self._turn) % len(ready)]

    def order(self) -> list[str]:
        """Every replica once, the next pick first (for a read's retries)."""
        first = self.pick()
        if first is None:
            return []
        now = self._clock()
        rest = sorted((a for a in self.addresses if a != first),
                      key=lambda a: (self._held.get(a, 0.0) > now, self._held.get(a, 0.0)))
        return [first, *rest]


class ReplicaPool:
    """Channels to every replica of ``service`` (see module doc)."""

    def __init__(self, service: str, stub: Callable[[grpc.aio.Channel], Any],
                 seeds: Sequence[str] = (), *, tls: TlsFiles | None = None,
                 clock: Clock = monotonic, hold_down: float = HOLD_DOWN,
                 dial: Callable[[str], grpc.aio.Channel] | None = None,
                 hold: float = DEFAULT_HOLD, probe: Probe | None = None) -> None:
        self.service = service
        #: Every call's attempt on its replica, bounded by the hold (module doc).
        self.holds = Holds(probe or health_probe(self.channel), hold, clock=clock)
        self.chooser = ReplicaChooser(seeds, clock=clock, hold_down=hold_down)
        self._stub = stub
        self._dial = dial or (lambda address: channel(address, tls=tls))
        self._channels: dict[str, grpc.aio.Channel] = {}
        self._stubs: dict[str, Any] = {}
        #: Channels of replicas that left, with when each may be closed.
        self._retired: dict[str, tuple[grpc.aio.Channel, float]] = {}
        self._retire_after = RETIRE_AFTER
        self._clock = clock

    def stub(self, address: str) -> Any:
        stub = self._stubs.get(address)
        if stub is None:
            stub = self._stubs[address] = self._stub(self.channel(address))
        return stub

    async def read(self, call: Callable[[Any], Awaitable[_T]]) -> _T:
        """``call(stub)`` on each replica in turn until one answers.

        For calls safe to repeat only (reads): a replica that is down or did
        not answer in time is held down and the next one tried; any other
        status is the answer. Raises the last replica's error.
        """
        last: Exception | None = None
        for address in self.chooser.order():
            try:
                out = await self._attempt(address, call)
            except AttemptEnded as ended:
                self.failed(address)
                last = HoldTimeout(f"{self.service} replica {address} did not answer: "
                                   f"{ended.reason}", metadata={"address": address})
                continue
            except grpc.RpcError as err:
                if err.code() not in FAILOVER_CODES:
                    raise
                self.failed(address)
                last = err
                continue
            self.succeeded(address)
            return out
        if last is None:
            raise LookupError(f"no {self.service} replica is known (no seed address, "
                              "none registered in membership)")
        raise last

    async def _attempt(self, address: str, call: Callable[[Any], Awaitable[_T]]) -> _T:
        """``call`` on ``address``, ended (AttemptEnded) if it goes silent."""
        with self.holds.attempt(address) as attempt:
            return await self.holds.wait(attempt, call(self.stub(address)))

    async def once(self, call: Callable[[Any], Awaitable[_T]]) -> _T:
        """``call(stub)`` on the next replica, once (a write: its outcome may
        be unknown, so it is never repeated here). A replica that is down is
        held down, so the caller's next attempt goes elsewhere."""
        address, _ = self.pick()
        try:
            out = await self._attempt(address, call)
        except AttemptEnded as ended:
            self.failed(address)
            raise HoldOutcomeUnknown(
                f"{self.service} replica {address} went silent during a write "
                f"({ended.reason}); it may have been applied",
                metadata={"address": address}) from None
        except grpc.RpcError as err:
            if err.code() in FAILOVER_CODES:
                self.failed(address)
            raise
        self.succeeded(address)
        return out

    def picked(self) -> tuple[str, Any]:
        """The next replica's address and stub (for a stream the caller watches)."""
        address, _ = self.pick()
        return address, self.stub(address)

    def __len__(self) -> int:
        return len(self.chooser.addresses)

    def channel(self, address: str) -> grpc.aio.Channel:
        ch = self._channels.get(address)
        if ch is None:
            back = self._retired.pop(address, None)  # a replica back on its address
            ch = self._channels[address] = back[0] if back else self._dial(address)
        return ch

    def pick(self) -> tuple[str, grpc.aio.Channel]:
        address = self.chooser.pick()
        if address is None:
            raise LookupError(f"no {self.service} replica is known (no seed address, "
                              "none registered in membership)")
        return address, self.channel(address)

    def order(self) -> list[tuple[str, grpc.aio.Channel]]:
        return [(a, self.channel(a)) for a in self.chooser.order()]

    def failed(self, address: str) -> None:
        self.chooser.failed(address)

    def succeeded(self, address: str) -> None:
        self.chooser.succeeded(address)

    async def set_members(self, addresses: Iterable[str]) -> None:
        before = set(self.chooser.addresses)
        self.chooser.set_members(addresses)
        now = set(self.chooser.addresses)
        if now != before:
            log.info("%s replicas: %s", self.service, ", ".join(sorted(now)) or "none")
        # A channel of a replica that left is not closed at once: closing a
        # grpc.aio channel cancels its calls, and a cancelled call raises
        # asyncio.CancelledError in its caller, which cannot tell it from
        # its own task being cancelled (a broker's event feed died of it
        # when membership replaced the seed address it was restoring from).
        # The calls end by their own timeouts, or fail over; the channel is
        # closed once none can still be running.
        for address in [a for a in self._channels if a not in now]:
            self._stubs.pop(address, None)
            self._retired[address] = (self._channels.pop(address),
                                      self._clock() + self._retire_after)
        due = [a for a, (_, at) in self._retired.items() if at <= self._clock()]
        for address in due:
            ch, _ = self._retired.pop(address)
            with contextlib.suppress(Exception):
                await ch.close(grace=None)

    async def discover(self, kv: Ranges | None, keyspace: Keyspace) -> None:
        """The replicas membership lists now (when there is an etcd client:
        ``kv``); Unavailable when none is known, seed or member."""
        if kv is not None:
            members = await list_members(kv, keyspace, self.service)
            await self.set_members(m.address for m in members.members)
        if not len(self):
            raise Unavailable(f"no {self.service} replica is known: no --{self.service}-address "
                              "and none registered in etcd")

    async def follow(self, kv: WatchKV, keyspace: Keyspace) -> None:
        """Keep the replica set current from membership (run as a task)."""
        async for members in watch_members(kv, keyspace, self.service):
            await self.set_members(m.address for m in members.members)

    async def close(self) -> None:
        await self.holds.close()
        channels, self._channels = list(self._channels.values()), {}
        channels += [ch for ch, _ in self._retired.values()]
        self._retired = {}
        self._stubs.clear()
        for ch in channels:
            with contextlib.suppress(Exception):
                await ch.close(grace=None)


def state_replicas(settings: ServeSettings, token: TokenSource) -> ReplicaPool:
    """The state service's replicas, for a service that calls it: seeded by
    ``settings.state_addresses`` (``--state-address``), every channel with
    the server's TLS and ``token`` (its identity, asked on every call)."""
    return ReplicaPool(STATE_SERVICE, state_pb2_grpc.StateServiceStub, settings.state_addresses,
                       dial=lambda address: channel(address, tls=settings.tls, token=token),
                       hold=settings.hold_timeout)
