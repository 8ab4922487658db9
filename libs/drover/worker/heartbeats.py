"""A client's heartbeats (pure): when each of its nodes sends the next one.

The control plane answers every heartbeat with the node's next TTL
(``UpdateNodeStatusResponse.heartbeat_ttl``, Nomad's ``HeartbeatTTL``): the
node sends its next heartbeat when that TTL has passed, as a Nomad client
does; the control plane marks it down only after TTL + its heartbeat grace
without one, so the grace is the margin for the trip. A heartbeat that
failed is retried after ``retry`` seconds (never later than the TTL would
have it). The TTL grows with the cluster, so 10,000 nodes in one process
send far fewer heartbeats than 10,000 times 1/TTL of a small cluster.

One schedule (a heap) serves every node of a process: one timer, not one
task per node.
"""

from __future__ import annotations

import heapq
from typing import Any


class HeartbeatSchedule:
    def __init__(self, fallback: float, retry: float = 1.0) -> None:
        #: The interval when an answer names no TTL (a server that sends none).
        self.fallback = fallback
        self.retry = retry
        self._heap: list[tuple[float, str]] = []
        self._ttl: dict[str, float] = {}

    def __len__(self) -> int:
        return len(self._heap)

    def add(self, node_id: str, at: float) -> None:
        """Heartbeat ``node_id`` at ``at`` (a node's first one: at once)."""
        heapq.heappush(self._heap, (at, node_id))

    def next_at(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def due(self, now: float) -> list[str]:
        """The nodes whose heartbeat is due at ``now``, taken off the schedule."""
        out = []
        while self._heap and self._heap[0][0] <= now:
            out.append(heapq.heappop(self._heap)[1])
        return out

    def ttl(self, node_id: str) -> float:
        """The TTL ``node_id`` was last told (the fallback before any answer)."""
        return self._ttl.get(node_id, self.fallback)

    def answered(self, node_id: str, now: float, response: Any) -> float:
        """The heartbeat sent at ``now`` was answered: the next one is due when
        the TTL it names has passed. Returns that TTL."""
        ttl = self.fallback
        if response.HasField("heartbeat_ttl"):
            ttl = response.heartbeat_ttl.ToNanoseconds() / 1e9 or self.fallback
        self._ttl[node_id] = ttl
        self.add(node_id, now + ttl)
        return ttl

    def failed(self, node_id: str, now: float) -> None:
        """The heartbeat failed: try again soon (within the TTL it had)."""
        self.add(node_id, now + min(self.retry, self.ttl(node_id)))
