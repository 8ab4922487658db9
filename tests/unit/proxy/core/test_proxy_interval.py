"""Rebalance interval scaling (Nomad's refreshServerRebalanceTimer table) and scheduling."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from virtual_clock import VirtualClock

from drover.errors import InvalidArgument
from drover.proxy.config import ProxyConfig
from drover.proxy.core.interval import RebalanceScheduler, rate_scaled_interval, rebalance_interval
from drover.proxy.core.server import Server
from drover.proxy.core.server_list import ServerList

CONFIG = ProxyConfig()
MINUTE = 60.0


class FixedRandom(random.Random):
    def __init__(self, value: float) -> None:
        super().__init__(0)
        self.value = value

    def random(self) -> float:
        return self.value


def test_rate_scaled_interval() -> None:
    assert rate_scaled_interval(64.0, 120.0, 64 * 1000) == 1000.0
    assert rate_scaled_interval(64.0, 120.0, 10) == 120.0
    assert rate_scaled_interval(0.0, 120.0, 10**6) == 120.0
    assert rate_scaled_interval(-1.0, 120.0, 10**6) == 120.0


# (clients, servers, lower bound) after Nomad's TestManagerInternal_refreshServerRebalanceTimer.
NOMAD_TABLE = [
    (0, 0, 2 * MINUTE),
    (1, 0, 2 * MINUTE),
    (1, 1, 2 * MINUTE),
    (1, 3, 2 * MINUTE),
    (1, 100, 2 * MINUTE),
    (10, 1, 2 * MINUTE),
    (100, 1, 2 * MINUTE),
    (10000, 1, 10000 / 64),
    (10000, 3, 2 * MINUTE),
    (10000, 100, 2 * MINUTE),
    (16384, 1, 4 * MINUTE),
    (65535, 0, 2 * MINUTE),
    (65535, 1, 17 * MINUTE),
    (65535, 3, 5 * MINUTE),
    (65535, 5, 3 * MINUTE),
    (65535, 7, 2 * MINUTE),
    (1_000_000, 5, 52 * MINUTE),
    (1_000_000, 100, 2 * MINUTE),
]


@pytest.mark.parametrize(("clients", "servers", "at_least"), NOMAD_TABLE)
def test_interval_lower_bounds(clients: int, servers: int, at_least: float) -> None:
    for seed in range(5):
        assert rebalance_interval(clients, servers, CONFIG, random.Random(seed)) >= at_least


def test_jitter_spreads_between_min_reuse_and_one_and_a_half_times_it() -> None:
    values = [rebalance_interval(10, 3, CONFIG, random.Random(seed)) for seed in range(50)]
    assert all(120.0 <= v < 180.0 for v in values)
    assert len(set(values)) > 40
    assert rebalance_interval(10, 3, CONFIG, FixedRandom(0.0)) == 120.0
    assert rebalance_interval(10, 3, CONFIG, FixedRandom(0.5)) == 150.0


def test_no_jitter_gives_exact_values() -> None:
    config = ProxyConfig(jitter_fraction=0.0)
    rng = random.Random(1)
    assert rebalance_interval(10000, 1, config, rng) == 156.25
    assert rebalance_interval(10000, 100, config, rng) == 120.0
    assert rebalance_interval(64 * 50 * 1000, 50, config, rng) == 1000.0


@given(
    clients=st.integers(min_value=1, max_value=10000),
    servers=st.integers(min_value=1, max_value=100),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_interval_bounds_for_any_cluster(clients: int, servers: int, seed: int) -> None:
    value = rebalance_interval(clients, servers, CONFIG, random.Random(seed))
    scaled = clients / (servers * 64)
    assert value >= CONFIG.min_reuse
    assert value >= scaled
    assert value <= max(CONFIG.min_reuse * 1.5, scaled)


@given(
    clients=st.integers(min_value=0, max_value=10000),
    servers=st.integers(min_value=1, max_value=100),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_interval_grows_with_clients_and_shrinks_with_servers(
    clients: int, servers: int, seed: int
) -> None:
    base = rebalance_interval(clients, servers, CONFIG, random.Random(seed))
    assert rebalance_interval(clients * 100, servers, CONFIG, random.Random(seed)) >= base
    assert rebalance_interval(clients, servers + 1, CONFIG, random.Random(seed)) <= base


def test_negative_cluster_size_is_rejected() -> None:
    with pytest.raises(InvalidArgument) as err:
        rebalance_interval(-1, 1, CONFIG, random.Random(0))
    assert err.value.reason == "INVALID_ARGUMENT"
    with pytest.raises(InvalidArgument):
        rebalance_interval(1, -1, CONFIG, random.Random(0))


def test_scheduler_sets_and_reports_the_next_rebalance() -> None:
    clock = VirtualClock(500.0)
    scheduler = RebalanceScheduler(CONFIG, clock, FixedRandom(0.0))
    assert scheduler.next_at is None
    assert scheduler.remaining() is None
    assert scheduler.due() is False
    assert scheduler.schedule(num_clients=64 * 300, num_servers=1) == 800.0
    assert scheduler.next_at == 800.0
    clock.now = 799.0
    assert scheduler.due() is False
    assert scheduler.remaining() == 1.0
    clock.now = 800.0
    assert scheduler.due() is True
    assert scheduler.remaining() == 0.0
    assert scheduler.schedule(num_clients=1, num_servers=1) == 920.0


def test_server_list_schedules_by_its_number_of_servers() -> None:
    clock = VirtualClock(0.0)
    lst = ServerList(
        "state",
        ProxyConfig(jitter_fraction=0.0),
        clock,
        random.Random(0),
        backups=("192.168.0.1:4647",),
    )
    lst.set_discovered([Server(f"10.0.0.{i}:4647", f"r{i}", 1) for i in range(3)])
    # 4 servers (3 discovered + 1 backup) x 64 conns/s: 64000 clients take 250 s.
    assert lst.schedule_rebalance(num_clients=64000) == 250.0
    assert lst.next_rebalance == 250.0
    assert lst.rebalance_due() is False
    clock.now = 250.0
    assert lst.rebalance_due() is True
