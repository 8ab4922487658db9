from __future__ import annotations

import pytest

from drover.coord.session import LeaseClock


def test_deadlines_run_from_the_send_time_not_the_reply_time() -> None:
    c = LeaseClock(9, granted_sent_at=100.0)
    assert (c.expires_at, c.act_until, c.next_send_at) == (109.0, 106.0, 103.0)
    c.on_send(103.0)
    c.on_reply(9, now=108.5)  # a late reply: counts from 103, not 108.5
    assert (c.expires_at, c.act_until) == (112.0, 109.0)
    assert not c.unsafe(108.9) and c.unsafe(109.0)
    assert not c.lost(111.9) and c.lost(112.0)


def test_ttl_zero_in_a_reply_means_the_lease_is_gone() -> None:
    c = LeaseClock(9, granted_sent_at=0.0)
    c.on_send(3.0)
    c.on_reply(0, now=3.1)
    assert c.gone and c.lost(3.1) and c.unsafe(3.1)


def test_replies_match_sends_in_order_and_reset_drops_pending() -> None:
    c = LeaseClock(6, granted_sent_at=0.0)
    c.on_send(2.0)
    c.on_send(4.0)
    c.on_reply(6, now=4.1)  # answers the send at 2.0
    assert c.expires_at == 8.0
    c.stream_reset()  # the send at 4.0 will never be answered
    c.on_reply(6, now=5.0)  # unmatched: proves nothing
    assert c.expires_at == 8.0


def test_deadline_never_moves_backwards() -> None:
    c = LeaseClock(6, granted_sent_at=10.0)
    c.on_send(12.0)
    c.on_reply(1, now=12.1)  # a shorter TTL cannot shorten a known deadline
    assert c.expires_at == 16.0


@pytest.mark.parametrize(("ttl", "fraction"), [(0, 0.5), (-1, 0.5), (5, 0.0), (5, 1.5)])
def test_rejects_bad_parameters(ttl: float, fraction: float) -> None:
    with pytest.raises(ValueError):
        LeaseClock(ttl, 0.0, act_fraction=fraction)
