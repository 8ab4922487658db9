"""Resuming an event stream on another replica: no gap, no duplicate. Pure.

``StateService/Subscribe`` streams responses in index order, one response
per etcd revision (all events of a revision together), heartbeats included
(a response with no events that only advances ``index``). Every replica
answers ``from_index = i`` with exactly the events of index > i. So when
the replica serving a stream stops (dies, freezes, leaves membership), the
proxy reopens the stream elsewhere with ``from_index`` = the index of the
last response it delivered, and the client sees one unbroken stream.

One subtlety: the new replica's cache may be behind the old one's, so its
first heartbeat can carry an index *below* the one already delivered.
:meth:`StreamCursor.admit` drops every response whose index is not above
the last delivered one: an index never goes backwards and no event is
delivered twice.

Before the first response the cursor knows nothing, and the stream is
reopened with the client's own request (as any read is retried).

The proxy also asks for heartbeats at least every ``heartbeat`` seconds
(half its hold timeout), unless the client asked for shorter ones: a quiet
stream then shows its server's life by itself, and the hold
(:mod:`drover.rpc.hold`) needs no pings to tell it from a frozen one.
"""

from __future__ import annotations

from dataclasses import dataclass

from google.protobuf.message import DecodeError

from drover.api.state.v1 import state_pb2

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
        index = state_pb2.SubscribeResponse.FromString(message).index
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
