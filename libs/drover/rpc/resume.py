"""Resuming an event stream on another replica: no gap, no duplicate.

``StateService/Subscribe`` streams responses in index order, one response
per etcd revision (all events of a revision together), heartbeats included
(a response with no events that only advances ``index``). Every replica
answers ``from_index = i`` with exactly the events of index > i. So when
the replica serving a stream stops (dies, freezes, leaves membership), the
client reopens the stream elsewhere with ``from_index`` = the index of the
last response it delivered, and its reader sees one unbroken stream. Three
clients do: the proxy for every Subscribe it forwards, the eval broker's
and the deployment watcher's feeds over their state-replica pool
(:func:`subscribe_resumed`), and a CLI/worker/node channel
(:mod:`drover.rpc.failover`).

One subtlety: the new replica's cache may be behind the old one's, so its
first heartbeat can carry an index *below* the one already delivered.
:meth:`StreamCursor.admit` drops every response whose index is not above
the last delivered one: an index never goes backwards and no event is
delivered twice.

Before the first response the cursor knows nothing, and the stream is
reopened with the client's own request (as any read is retried).

Each client also asks for heartbeats at least every ``heartbeat`` seconds
(half its hold timeout), unless the caller asked for shorter ones: a quiet
stream then shows its server's life by itself, and the hold
(:mod:`drover.rpc.hold`) needs no pings to tell it from a frozen one.

:class:`StreamCursor` is pure; :func:`subscribe_resumed` is its loop over a
:class:`~drover.rpc.replicas.ReplicaPool`: every read of the stream is an
attempt bounded by the pool's hold, and a stream that ends UNAVAILABLE,
DEADLINE_EXCEEDED, cancelled by its server, or silent past the hold is
reopened on the next replica. It gives up (raising the last failure) only
after every replica failed twice in a row without delivering anything.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

import grpc
from google.protobuf.message import DecodeError

from drover.api.state.v1 import state_pb2
from drover.rpc.hold import AttemptEnded, HoldTimeout
from drover.rpc.replicas import FAILOVER_CODES, ReplicaPool

__all__ = ["RESUMABLE", "StreamCursor", "subscribe_resumed"]

log = logging.getLogger(__name__)

#: Pause before reopening after a failure, doubled per failure in a row (s).
RESUME_BACKOFF = (0.05, 1.0)

#: Server-streaming methods the proxy resumes, by full path.
RESUMABLE: frozenset[str] = frozenset({"/drover.state.v1.StateService/Subscribe"})


@dataclass
class StreamCursor:
    """Where a resumable stream stands: the request and the last index delivered."""

    request: bytes
    #: Heartbeats asked for at least this often (seconds; 0: as the client asked).
    heartbeat: float = 0.0
    #: Index of the last response delivered to the client (0: none yet).
    delivered: int = 0
    #: Responses dropped as already delivered (stale heartbeats, replays).
    dropped: int = 0
    #: Times the stream was reopened after delivering something.
    resumes: int = 0

    def admit(self, message: bytes) -> bool:
        """True if ``message`` (a serialized response) is new to the client."""
        return self.admit_index(state_pb2.SubscribeResponse.FromString(message).index)

    def admit_index(self, index: int) -> bool:
        """True if a response of ``index`` is new to the client."""
        if self.delivered and index <= self.delivered:
            self.dropped += 1
            return False
        self.delivered = max(self.delivered, index)
        return True

    def resume_request(self) -> bytes:
        """The request that (re)opens the stream after the last delivered index."""
        try:
            req = state_pb2.SubscribeRequest.FromString(self.request)
        except DecodeError:
            # Not a request at all: pass it on as it came, so the replica
            # refuses it (INVALID_ARGUMENT) and nothing is resumed.
            return self.request
        if self.delivered:
            req.from_index = self.delivered
        if self.heartbeat > 0:
            asked = req.heartbeat_interval
            asked_s = asked.seconds + asked.nanos / 1e9
            if not req.HasField("heartbeat_interval") or asked_s <= 0 or asked_s > self.heartbeat:
                req.heartbeat_interval.FromNanoseconds(int(self.heartbeat * 1e9))
        return req.SerializeToString()


async def subscribe_resumed(pool: ReplicaPool, request: state_pb2.SubscribeRequest,
                            ) -> AsyncIterator[state_pb2.SubscribeResponse]:
    """``request``'s Subscribe over ``pool``, resumed on another replica from
    the last index delivered whenever the one serving it fails or freezes
    (module doc). Ends when a replica ends the stream (OK); raises a
    non-failover status as it came, and the last failure once every replica
    failed twice in a row without delivering."""
    cursor = StreamCursor(request.SerializeToString(), heartbeat=pool.holds.hold / 2)
    failures = 0
    while True:
        address, stub = pool.picked()
        call = stub.Subscribe(state_pb2.SubscribeRequest.FromString(cursor.resume_request()))
        try:
            with pool.holds.attempt(address) as held:
                while True:
                    message = await pool.holds.wait(held, call.read())
                    if message is grpc.aio.EOF:
                        return
                    if cursor.admit_index(message.index):
                        failures = 0
                        yield message
        except AttemptEnded as ended:
            error: Exception = HoldTimeout(
                f"{pool.service} replica {address} went silent during Subscribe "
                f"({ended.reason})", metadata={"address": address})
        except grpc.aio.AioRpcError as err:
            if err.code() not in FAILOVER_CODES | {grpc.StatusCode.CANCELLED}:
                raise
            error = err
        finally:
            call.cancel()
        pool.failed(address)
        failures += 1
        if failures > 2 * max(1, len(pool)):
            raise error
        cursor.resumes += 1
        log.info("%s Subscribe: resuming after index %d (%s failed: %s)", pool.service,
                 cursor.delivered, address, error)
        await asyncio.sleep(min(RESUME_BACKOFF[1], RESUME_BACKOFF[0] * 2 ** failures))
