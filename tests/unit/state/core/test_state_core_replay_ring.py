"""The replay ring's guarantee (every change after its floor, whole
revisions only) under both bounds: the window and the count."""

from __future__ import annotations

from typing import NamedTuple

from drover.state.core.replay_ring import ReplayRing


class Ch(NamedTuple):
    revision: int
    n: int = 0


def _rev(r: int, k: int = 1) -> list[Ch]:
    return [Ch(r, i) for i in range(k)]


def test_resumes_after_the_floor_are_served_and_older_ones_go_to_history() -> None:
    ring: ReplayRing[Ch] = ReplayRing(10, limit=100, window=60.0)
    for r in range(11, 16):
        ring.append(r, _rev(r), now=float(r))
    assert [c.revision for c in ring.since(12, 14) or []] == [13, 14]
    assert ring.since(10, 15) is not None and len(ring.since(10, 15) or []) == 5
    assert ring.since(9, 15) is None  # revision 10 was never in it


def test_the_window_bounds_the_ring_by_age_whatever_the_rate() -> None:
    ring: ReplayRing[Ch] = ReplayRing(0, limit=1_000_000, window=60.0)
    for t in range(0, 600):  # ten minutes, one revision a second
        ring.append(t + 1, _rev(t + 1, 3), now=float(t))
    # only the last 60 s are held: the plateau is reached after the window
    assert len(ring) == 3 * 61
    assert ring.floor == 539
    assert ring.since(538, 600) is None
    assert [c.revision for c in ring.since(539, 600) or []][:3] == [540, 540, 540]


def test_the_count_bounds_the_ring_and_never_keeps_part_of_a_revision() -> None:
    ring: ReplayRing[Ch] = ReplayRing(0, limit=5, window=3600.0)
    ring.append(1, _rev(1, 3), now=0.0)
    ring.append(2, _rev(2, 3), now=1.0)  # 6 > 5: revision 1 goes, all of it
    assert ring.floor == 1 and [c.revision for c in ring.since(1, 2) or []] == [2, 2, 2]
    ring.append(3, _rev(3, 4), now=2.0)  # 7 > 5: revision 2 goes whole, too
    assert ring.floor == 2 and len(ring) == 4
    assert ring.since(1, 3) is None


def test_a_reset_empties_it_up_to_the_relisted_revision() -> None:
    ring: ReplayRing[Ch] = ReplayRing(0, limit=10, window=60.0)
    ring.append(1, _rev(1), now=0.0)
    ring.reset(50)
    assert len(ring) == 0 and ring.since(1, 50) is None and ring.since(50, 50) == []
    ring.append(51, _rev(51), now=100.0)
    assert [c.revision for c in ring.since(50, 51) or []] == [51]
