"""discard_sorted (one pass over SortedList's sublists) removes exactly what
per-key discard would, and leaves a list every SortedList operation trusts."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from sortedcontainers import SortedList

from drover.paging.index import Key
from drover.paging.sorted_lists import discard_sorted


@settings(max_examples=150, deadline=None)
@given(present=st.sets(st.integers(0, 3000), max_size=2500),
       gone=st.lists(st.integers(0, 3100), max_size=400),
       load=st.sampled_from([4, 16, 1000]),
       after=st.lists(st.integers(0, 3100), max_size=30))  # fmt: skip
def test_discard_sorted_equals_per_key_discard(present: set[int], gone: list[int], load: int,
                                               after: list[int]) -> None:
    keys = [Key(i, f"id{i:05}") for i in sorted(present)]
    ours, theirs = SortedList(keys), SortedList(keys)
    ours._reset(load)
    theirs._reset(load)
    batch = sorted({Key(i, f"id{i:05}") for i in gone})
    discard_sorted(ours, batch)
    for k in batch:
        theirs.discard(k)
    assert list(ours) == list(theirs) and len(ours) == len(theirs)
    ours._check()  # sortedcontainers' own invariant check (maxes, lengths)
    # Positional and ordered operations keep working on the cut list.
    for i in after:
        k = Key(i, f"id{i:05}")
        ours.add(k)
        theirs.add(k)
        ours.discard(Key(i + 1, f"id{i + 1:05}"))
        theirs.discard(Key(i + 1, f"id{i + 1:05}"))
    assert list(ours) == list(theirs)
    if len(ours):
        assert ours[len(ours) // 2] == theirs[len(theirs) // 2]
        assert ours.bisect_left(Key(1500, "")) == theirs.bisect_left(Key(1500, ""))


def test_a_run_cut_from_the_middle_keeps_sortedlists_balance() -> None:
    sl = SortedList(Key(i, "a") for i in range(1000))
    sl._reset(16)
    discard_sorted(sl, [Key(i, "a") for i in range(20, 60)])
    sl._check()
    assert len(sl) == 960 and sl[20] == Key(60, "a")
