"""The pure parts of a filter delete: pages cut into txns, and where a page
only partly applied resumes."""

from __future__ import annotations

import pytest

from drover.paging import Key
from drover.state.evaluations.delete_by_filter import chunked, resume_after


def _hit(i: int) -> tuple[bytes, int, Key]:
    return (b"", 100 + i, Key(10 + i, f"default/ev-{i}"))


HITS = [_hit(i) for i in range(7)]


def test_a_page_is_cut_in_walk_order_into_txns_of_the_size() -> None:
    cut = chunked(HITS, 3)
    assert [len(c) for c in cut] == [3, 3, 1]
    assert [h for c in cut for h in c] == HITS


def test_resume_after_the_hit_before_the_first_left() -> None:
    # ev-4 and ev-1 left (ev-1 first in walk order): resume after ev-0.
    assert resume_after(HITS, {"default/ev-4", "default/ev-1"}) == Key(10, "default/ev-0")
    assert resume_after(HITS, {"default/ev-6"}) == Key(15, "default/ev-5")


def test_the_first_hit_left_resumes_where_the_page_started() -> None:
    assert resume_after(HITS, {"default/ev-0", "default/ev-5"}) is None


def test_nothing_left_is_a_caller_error() -> None:
    with pytest.raises(ValueError):
        resume_after(HITS, {"default/ev-99"})
