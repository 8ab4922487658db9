from __future__ import annotations

from typing import cast

import pytest

from drover.coord.session import LeaseClock, election_warning


def test_deadlines_run_from_the_send_time_not_the_reply_time() -> None:
    c = LeaseClock(9, granted_sent_at=100.0)
    assert (c.expires_at, c.act_until, c.next_send_at) == (109.0, 106.0, 101.5)
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


def test_default_session_survives_an_etcd_election() -> None:
    assert election_warning(10) is None  # 10 x (2/3 - 1/6) = 5 s >= 3 s
    assert election_warning(6) is None


@pytest.mark.parametrize(("ttl", "fraction"), [(2, 2 / 3), (5, 2 / 3), (10, 0.4), (10, 0.1)])
def test_values_that_lose_leadership_in_an_election_are_named(ttl: int, fraction: float) -> None:
    msg = election_warning(ttl, fraction)
    assert msg is not None and "election" in msg and f"TTL {ttl} s" in msg


def test_warning_suggests_a_ttl_that_would_do() -> None:
    msg = election_warning(2)
    assert msg is not None and "at least 6 s" in msg
    assert election_warning(6) is None


def test_leadership_warns_at_startup_when_its_ttl_cannot_survive_an_election(
        caplog: pytest.LogCaptureFixture) -> None:
    from drover.coord import Keyspace, Leadership, LeadershipConfig
    from drover.coord.leadership import LeadershipKV

    unused = cast(LeadershipKV, object())  # constructing only warns: the KV is never called

    with caplog.at_level("WARNING", logger="drover.coord.leadership"):
        Leadership(unused, Keyspace("/x/drover"), "broker", "a:1",
                   config=LeadershipConfig(ttl=2))
    assert any("election" in r.getMessage() for r in caplog.records)
    caplog.clear()
    with caplog.at_level("WARNING", logger="drover.coord.leadership"):
        Leadership(unused, Keyspace("/x/drover"), "broker", "a:1")
    assert not caplog.records
