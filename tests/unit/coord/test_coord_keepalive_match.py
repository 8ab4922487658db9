"""PendingKeepAlives: which waiter a LeaseKeepAlive reply on a shared stream answers."""

from __future__ import annotations

from drover.coord.keepalive_match import PendingKeepAlives


def test_replies_match_by_lease_id_whatever_the_order() -> None:
    p: PendingKeepAlives[str] = PendingKeepAlives()
    p.add(1, "a")
    p.add(2, "b")
    assert len(p) == 2 and p.outstanding() == 2
    assert p.answer(2) == ["b"]
    assert p.answer(1) == ["a"]
    assert len(p) == 0 and p.outstanding() == 0


def test_callers_of_one_lease_each_get_the_reply_to_their_own_request() -> None:
    p: PendingKeepAlives[str] = PendingKeepAlives()
    p.add(7, "first")
    p.add(7, "second")
    assert p.answer(7) == ["first"]
    assert p.answer(7) == ["second"]
    assert p.answer(7) == []  # nothing outstanding: a stray reply answers no one


def test_a_caller_never_takes_the_reply_to_a_request_sent_before_it_asked() -> None:
    p: PendingKeepAlives[str] = PendingKeepAlives()
    p.add(7, "early")
    assert p.drop(7, "early")  # gave up; its request is still on the wire
    p.add(7, "late")
    assert p.outstanding() == 2
    assert p.answer(7) == []  # the early request's reply
    assert p.answer(7) == ["late"]
    assert p.outstanding() == 0


def test_drop_and_unknown_ids() -> None:
    p: PendingKeepAlives[str] = PendingKeepAlives()
    assert p.answer(99) == []
    assert not p.drop(99, "x")
    p.add(1, "a")
    assert not p.drop(1, "b")
    assert p.drop(1, "a") and not p.drop(1, "a")
    assert len(p) == 0 and p.outstanding() == 1


def test_clear_hands_back_every_waiter_and_empties_the_table() -> None:
    p: PendingKeepAlives[str] = PendingKeepAlives()
    for lease, w in [(1, "a"), (2, "b"), (1, "c")]:
        p.add(lease, w)
    assert sorted(p.clear()) == ["a", "b", "c"]
    assert len(p) == 0 and p.outstanding() == 0
    assert p.answer(1) == []
