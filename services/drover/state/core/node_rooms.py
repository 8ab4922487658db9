"""Per node, what its live allocations reserve, kept as the cache applies them.

A plan is judged node by node (:mod:`.usage`): room is the node's resources
less what its live allocations reserve. Working that out from the
allocation table means decoding every allocation on every node the plan
touches, under the replica's plan lock, once per plan: a plan of 100
placements decoded a thousand allocations and more. The tables keep the
answer instead, changed as each allocation change is applied (decoded
once, when it changes, and only when it is live).

Invariants, at every revision the tables reflect:

- ``live(node)`` holds exactly the allocations whose stored value has
  ``node_id == node`` and is live (:func:`drover.worker.resources.is_live`),
  each with what it reserves (``Vec.of(resources)``);
- ``total(node)`` is the sum of ``live(node)``'s values;
- an allocation is on at most one node here (a put moves it, a delete drops
  it).
"""

from __future__ import annotations

from collections.abc import Mapping

from drover.worker.resources import Vec

_EMPTY: Mapping[str, Vec] = {}


class NodeRooms:
    """Live reservations per node (module doc); keys are ``"<ns>/<id>"``."""

    def __init__(self) -> None:
        self._on: dict[str, dict[str, Vec]] = {}
        self._total: dict[str, Vec] = {}
        self._where: dict[str, str] = {}
        # What allocations reserve is one of a few sizes: one Vec each.
        self._sizes: dict[tuple[int, int], Vec] = {}

    def put(self, nsid: str, node_id: str, reserves: tuple[int, int] | None) -> None:
        """The allocation's new stored value: on ``node_id``, reserving
        ``reserves`` (cpu, memory_mb) when live, None when not."""
        self.drop(nsid)
        if reserves is None or not node_id:
            return
        vec = self._sizes.get(reserves)
        if vec is None:
            vec = self._sizes[reserves] = Vec(*reserves)
        self._on.setdefault(node_id, {})[nsid] = vec
        self._total[node_id] = self._total.get(node_id, Vec()) + vec
        self._where[nsid] = node_id

    def drop(self, nsid: str) -> None:
        """The allocation is gone, or no longer live."""
        node_id = self._where.pop(nsid, None)
        if node_id is None:
            return
        on = self._on[node_id]
        vec = on.pop(nsid)
        if on:
            self._total[node_id] = self._total[node_id] - vec
        else:
            del self._on[node_id], self._total[node_id]

    def clear(self) -> None:
        self._on.clear()
        self._total.clear()
        self._where.clear()

    def live(self, node_id: str) -> Mapping[str, Vec]:
        """The node's live allocations and what each reserves (read only)."""
        return self._on.get(node_id, _EMPTY)

    def total(self, node_id: str) -> Vec:
        """What the node's live allocations reserve together."""
        return self._total.get(node_id, Vec())
