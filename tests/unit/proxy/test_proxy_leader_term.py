"""Leader hints carry the term: a stale hint (older term than the elected
leader the proxy knows) does not bounce calls back to a deposed leader."""

from __future__ import annotations

import random

from drover.proxy.config import ProxyConfig
from drover.proxy.core.failure import classify
from drover.proxy.core.retry import RetryAction, decide_retry
from drover.proxy.core.server import Server
from drover.proxy.core.server_list import ServerList
from drover.rpc.remote import RemoteStatus


def _list() -> tuple[ServerList, list[Server]]:
    lst = ServerList("broker", ProxyConfig(), lambda: 1000.0, random.Random(7))
    servers = [Server(f"10.0.0.{i}:4647", f"r{i}", 1) for i in range(4)]
    lst.set_discovered(servers)
    return lst, servers


def test_hint_of_an_older_term_is_ignored() -> None:
    lst, (a, b, _, _) = _list()
    lst.set_leader(b.address, 20)
    lst.follow_hint(a.address, 12)  # a replica that has not seen the election
    assert lst.pick() == b


def test_hint_of_a_newer_term_or_without_a_term_is_followed() -> None:
    lst, (a, b, c, d) = _list()
    lst.set_leader(b.address, 20)
    lst.follow_hint(c.address, 25)
    assert lst.pick() == c
    lst.set_leader(a.address, 30)
    lst.follow_hint(d.address)  # an old replica that sends no term: trusted
    assert lst.pick() == d
    lst.follow_hint(b.address)  # ... unless it names a leader known deposed
    assert lst.pick() == d


def test_term_travels_from_the_status_to_the_decision() -> None:
    failure = classify(RemoteStatus("UNAVAILABLE", "not the leader", leader="b:2", answered=True,
                                    leader_term=42), server="a:1")
    assert (failure.leader_hint, failure.leader_term) == ("b:2", 42)
    decision = decide_retry("/drover.broker.v1.EvalBrokerService/Dequeue", failure)
    assert decision.action is RetryAction.FOLLOW_LEADER
    assert (decision.leader, decision.leader_term) == ("b:2", 42)
    junk = classify(RemoteStatus("UNAVAILABLE", "", leader="b:2"), server="a:1")
    assert junk.leader_term == 0
