"""Rebalance: plan, pings, reorder, and the rules on saving (Nomad's manager tests)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from virtual_clock import VirtualClock

from drover.proxy.config import ProxyConfig
from drover.proxy.core.rebalance import PingResult, RebalancePlan, RebalanceVerdict, reorder
from drover.proxy.core.server import Server
from drover.proxy.core.server_list import ServerList
from drover.proxy.errors import ForeignPlan, InvalidPingResults


def make_servers(n: int) -> list[Server]:
    return [Server(f"10.0.0.{i}:4647", f"r{i}", 1) for i in range(n)]


def make_list(
    n: int, *, backups: tuple[str, ...] = (), service: str = "state", seed: int = 3
) -> ServerList:
    lst = ServerList(service, ProxyConfig(), VirtualClock(), random.Random(seed), backups=backups)
    lst.set_discovered(make_servers(n))
    return lst


def addrs(servers: tuple[Server, ...] | list[Server]) -> list[str]:
    return [s.address for s in servers]


def ok(server: Server) -> PingResult:
    return PingResult(server.address, True)


def down(server: Server) -> PingResult:
    return PingResult(server.address, False)


def test_plan_is_a_shuffled_copy_of_the_discovered_servers() -> None:
    lst = make_list(6, backups=("192.168.0.1:4647",))
    before = lst.servers
    orders = {tuple(addrs(lst.begin_rebalance().order)) for _ in range(20)}
    plan = lst.begin_rebalance()
    assert sorted(addrs(plan.order)) == sorted(addrs(lst.discovered))
    assert all(not s.backup for s in plan.order)
    assert plan.generation == lst.generation
    assert plan.service == "state"
    assert len(orders) > 1
    # Planning alone changes nothing.
    assert lst.servers == before


def test_first_healthy_server_leads_and_failed_ones_go_back_in_ping_order() -> None:
    lst = make_list(5)
    plan = lst.begin_rebalance()
    p = plan.order
    # The pinger stops at the first healthy server, like Nomad.
    outcome = lst.finish_rebalance(plan, [down(p[0]), down(p[1]), ok(p[2])])
    assert outcome.saved is True
    assert outcome.verdict is RebalanceVerdict.SAVED
    assert addrs(lst.servers) == addrs([p[2], p[3], p[4], p[0], p[1]])
    assert outcome.servers == lst.servers
    assert lst.healthy(p[0].address) is False
    assert lst.healthy(p[2].address) is True
    assert lst.pick() == p[2]


def test_full_ping_keeps_plan_order_for_answering_servers() -> None:
    lst = make_list(4)
    plan = lst.begin_rebalance()
    p = plan.order
    outcome = lst.finish_rebalance(plan, [ok(p[0]), down(p[1]), ok(p[2]), ok(p[3])])
    assert outcome.saved
    assert addrs(lst.servers) == addrs([p[0], p[2], p[3], p[1]])


def test_all_failing_keeps_the_original_order() -> None:
    lst = make_list(4)
    before = lst.servers
    plan = lst.begin_rebalance()
    outcome = lst.finish_rebalance(plan, [down(s) for s in plan.order])
    assert outcome.saved is False
    assert outcome.verdict is RebalanceVerdict.NO_HEALTHY_SERVER
    assert lst.servers == before
    # What the pings learned is still shown.
    assert not any(s.healthy for s in lst.snapshot().servers)


def test_no_results_saves_nothing() -> None:
    lst = make_list(3)
    before = lst.servers
    outcome = lst.finish_rebalance(lst.begin_rebalance(), [])
    assert outcome.verdict is RebalanceVerdict.NO_HEALTHY_SERVER
    assert lst.servers == before


def test_empty_list_has_nothing_to_rebalance() -> None:
    lst = make_list(0, backups=("192.168.0.1:4647",))
    plan = lst.begin_rebalance()
    assert plan.order == ()
    outcome = lst.finish_rebalance(plan, [])
    assert outcome.verdict is RebalanceVerdict.NO_SERVERS
    assert addrs(lst.servers) == ["192.168.0.1:4647"]


def test_discovery_change_during_pings_discards_the_result() -> None:
    lst = make_list(4)
    plan = lst.begin_rebalance()
    p = plan.order
    new = [*make_servers(4)[1:], Server("10.0.0.9:4647", "r9", 1)]
    lst.set_discovered(new)
    after_discovery = lst.servers
    outcome = lst.finish_rebalance(plan, [down(p[0]), ok(p[1])])
    assert outcome.saved is False
    assert outcome.verdict is RebalanceVerdict.DISCOVERY_CHANGED
    assert "generation" in outcome.message
    assert lst.servers == after_discovery
    # Health learned for servers still listed is kept; removed ones are not resurrected.
    assert sorted(addrs(lst.servers)) == sorted(addrs(new))


def test_same_set_from_discovery_during_pings_does_not_discard() -> None:
    lst = make_list(3)
    plan = lst.begin_rebalance()
    lst.set_discovered(list(reversed(make_servers(3))))
    outcome = lst.finish_rebalance(plan, [ok(plan.order[0])])
    assert outcome.saved


def test_rotation_during_pings_is_overwritten_by_the_saved_order() -> None:
    lst = make_list(3)
    plan = lst.begin_rebalance()
    lst.notify_failed(lst.servers[0])
    outcome = lst.finish_rebalance(plan, [ok(plan.order[0])])
    assert outcome.saved
    assert addrs(lst.servers) == addrs(plan.order)


def test_rebalance_keeps_backups_last_and_ends_a_fallback() -> None:
    backups = ("192.168.0.1:4647", "192.168.0.2:4647")
    lst = make_list(2, backups=backups)
    for _ in range(2):
        front = lst.pick()
        assert front is not None
        lst.notify_failed(front)
    fallback = lst.pick()
    assert fallback is not None and fallback.backup
    plan = lst.begin_rebalance()
    outcome = lst.finish_rebalance(plan, [ok(plan.order[0])])
    assert outcome.saved
    assert addrs(lst.servers)[-2:] == list(backups)
    assert lst.pick() == plan.order[0]


@pytest.mark.parametrize(
    "results",
    [
        [PingResult("10.9.9.9:1", True)],  # not in the plan
        "reversed",  # out of plan order
        "repeated",
    ],
)
def test_results_that_do_not_follow_the_plan_are_rejected(results: object) -> None:
    lst = make_list(3)
    before = lst.servers
    plan = lst.begin_rebalance()
    if results == "reversed":
        results = [down(plan.order[1]), ok(plan.order[0])]
    elif results == "repeated":
        results = [down(plan.order[0]), ok(plan.order[0])]
    assert isinstance(results, list)
    with pytest.raises(InvalidPingResults) as err:
        lst.finish_rebalance(plan, results)
    assert err.value.reason == "INVALID_PING_RESULTS"
    assert lst.servers == before
    assert all(s.healthy for s in lst.snapshot().servers)


def test_plan_of_another_service_is_rejected() -> None:
    state = make_list(2)
    broker = make_list(2, service="broker")
    with pytest.raises(ForeignPlan) as err:
        broker.finish_rebalance(state.begin_rebalance(), [])
    assert err.value.reason == "FOREIGN_PLAN"


@given(
    n=st.integers(min_value=1, max_value=8),
    data=st.data(),
)
def test_reorder_properties(n: int, data: st.DataObject) -> None:
    plan = RebalancePlan("state", tuple(make_servers(n)), 1, 0.0)
    pinged = sorted(data.draw(st.sets(st.integers(min_value=0, max_value=n - 1), max_size=n)))
    health = data.draw(st.lists(st.booleans(), min_size=len(pinged), max_size=len(pinged)))
    results = [PingResult(plan.order[i].address, h) for i, h in zip(pinged, health, strict=True)]
    order = reorder(plan, results)
    if not any(health):
        assert order is None
        return
    assert order is not None
    assert sorted(order) == sorted(addrs(plan.order))
    failed = [r.address for r in results if not r.healthy]
    assert order[len(order) - len(failed) :] == failed
    first_ok = next(r.address for r in results if r.healthy)
    # Everything before the first answer failed, so the first answer leads
    # unless an unpinged server came earlier in the plan.
    assert order.index(first_ok) <= pinged[health.index(True)]
    # Servers that did not fail keep their plan order.
    kept = [a for a in addrs(plan.order) if a not in set(failed)]
    assert order[: len(kept)] == kept
