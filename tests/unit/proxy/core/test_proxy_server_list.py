"""ServerList: first in use, rotation, discovery, backups, leader, snapshot."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from virtual_clock import VirtualClock

from drover.errors import InvalidArgument
from drover.proxy.config import ProxyConfig
from drover.proxy.core.server import Server
from drover.proxy.core.server_list import ServerList
from drover.proxy.errors import InvalidServer


class ReversingRandom(random.Random):
    """Makes every shuffle visible: it reverses instead."""

    def shuffle(self, x: list) -> None:  # type: ignore[override]
        x.reverse()


def make_servers(n: int, version: int = 1) -> list[Server]:
    return [Server(f"10.0.0.{i}:4647", f"r{i}", version) for i in range(n)]


def make_list(
    service: str = "state",
    *,
    backups: tuple[str, ...] = (),
    rng: random.Random | None = None,
    clock: VirtualClock | None = None,
) -> ServerList:
    return ServerList(
        service,
        ProxyConfig(),
        clock or VirtualClock(1000.0),
        rng or random.Random(7),
        backups=backups,
    )


def addresses(servers: tuple[Server, ...] | list[Server]) -> list[str]:
    return [s.address for s in servers]


# -- first in use and rotation ----------------------------------------------


def test_empty_list_picks_nothing() -> None:
    lst = make_list()
    assert lst.pick() is None
    assert lst.servers == ()


def test_first_server_is_in_use() -> None:
    lst = make_list(rng=ReversingRandom())
    lst.set_discovered(make_servers(3))
    assert lst.pick() == lst.servers[0]
    assert lst.pick() == make_servers(3)[2]


def test_failed_front_server_rotates_to_back() -> None:
    lst = make_list()
    lst.set_discovered(make_servers(3))
    a, b, c = lst.servers
    assert lst.notify_failed(a) is True
    assert lst.servers == (b, c, a)
    assert lst.pick() == b
    assert lst.healthy(a.address) is False


def test_failed_server_not_at_front_does_not_rotate() -> None:
    lst = make_list()
    lst.set_discovered(make_servers(3))
    before = lst.servers
    assert lst.notify_failed(before[1]) is False
    assert lst.servers == before
    # The failure is still recorded.
    assert lst.healthy(before[1].address) is False


def test_concurrent_failures_of_one_server_rotate_once() -> None:
    lst = make_list()
    lst.set_discovered(make_servers(3))
    a, b, c = lst.servers
    assert lst.notify_failed(a) is True
    assert lst.notify_failed(a) is False
    assert lst.servers == (b, c, a)


def test_rotation_is_a_noop_with_one_server() -> None:
    lst = make_list()
    (only,) = make_servers(1)
    lst.set_discovered([only])
    assert lst.notify_failed(only) is False
    assert lst.servers == (only,)
    assert lst.pick() == only


def test_failure_of_unlisted_server_is_ignored() -> None:
    lst = make_list()
    lst.set_discovered(make_servers(2))
    before = lst.servers
    assert lst.notify_failed(Server("10.9.9.9:1", "gone", 1)) is False
    assert lst.servers == before
    assert [st.healthy for st in lst.snapshot().servers] == [True, True]


@given(
    n=st.integers(min_value=1, max_value=8),
    failures=st.lists(st.integers(min_value=0, max_value=7), max_size=30),
    seed=st.integers(min_value=0, max_value=2**16),
)
def test_rotation_preserves_the_set_and_the_cycle(n: int, failures: list[int], seed: int) -> None:
    lst = make_list(rng=random.Random(seed))
    lst.set_discovered(make_servers(n))
    start = list(lst.servers)
    for index in failures:
        lst.notify_failed(lst.servers[index % n])
    now = list(lst.servers)
    assert sorted(addresses(now)) == sorted(addresses(start))
    # Only front-to-back moves happen: the order is always a rotation of the start.
    shift = start.index(now[0])
    assert now == start[shift:] + start[:shift]


# -- discovery ----------------------------------------------------------------


def test_same_set_keeps_order_and_refreshes_records() -> None:
    lst = make_list()
    first = lst.set_discovered(make_servers(4))
    lst.notify_failed(lst.servers[0])
    order = addresses(lst.servers)
    refreshed = [Server(s.address, s.replica + "-restarted", 1) for s in make_servers(4)]
    update = lst.set_discovered(reversed(refreshed))
    assert update.changed is False
    assert update.generation == first.generation
    assert addresses(lst.servers) == order
    assert all(s.replica.endswith("-restarted") for s in lst.servers)


def test_different_set_is_shuffled_in_and_bumps_generation() -> None:
    lst = make_list(rng=ReversingRandom())
    lst.set_discovered(make_servers(3))
    generation = lst.generation
    new = make_servers(5)
    update = lst.set_discovered(new)
    assert update.changed is True
    assert update.generation == generation + 1 == lst.generation
    assert list(lst.servers) == list(reversed(new))


def test_shuffle_differs_across_seeds() -> None:
    firsts = set()
    for seed in range(30):
        lst = make_list(rng=random.Random(seed))
        lst.set_discovered(make_servers(6))
        firsts.add(lst.pick())
    # Different clients start on different servers.
    assert len(firsts) > 1


def test_new_set_forgets_health_of_removed_servers() -> None:
    lst = make_list()
    servers = make_servers(3)
    lst.set_discovered(servers)
    gone = lst.servers[0]
    lst.notify_failed(gone)
    lst.set_discovered([s for s in servers if s != gone])
    lst.set_discovered(servers)
    assert lst.healthy(gone.address) is True


def test_duplicate_addresses_in_discovery_are_listed_once() -> None:
    lst = make_list()
    a = Server("10.0.0.1:4647", "old", 1)
    a2 = Server("10.0.0.1:4647", "new", 1)
    lst.set_discovered([a, a2])
    assert lst.servers == (a,)


def test_discovered_record_marked_backup_is_rejected() -> None:
    lst = make_list()
    with pytest.raises(InvalidServer) as err:
        lst.set_discovered([Server.backup_at("10.0.0.1:4647")])
    assert err.value.reason == "INVALID_SERVER"


# -- backups --------------------------------------------------------------------


def test_backups_stay_after_discovered_in_config_order() -> None:
    backups = ("192.168.0.2:4647", "192.168.0.1:4647")
    lst = make_list(backups=backups, rng=ReversingRandom())
    assert addresses(lst.servers) == list(backups)
    lst.set_discovered(make_servers(3))
    # The discovered servers were shuffled (reversed); the backups were not.
    assert addresses(lst.servers) == addresses(list(reversed(make_servers(3)))) + list(backups)
    assert all(s.backup for s in lst.servers[3:])
    lst.set_discovered(make_servers(4))
    assert addresses(lst.servers)[-2:] == list(backups)


def test_backup_used_when_nothing_is_discovered() -> None:
    lst = make_list(backups=("192.168.0.1:4647", "192.168.0.2:4647"))
    picked = lst.pick()
    assert picked is not None and picked.backup and picked.address == "192.168.0.1:4647"
    assert lst.notify_failed(picked) is True
    assert addresses(lst.servers) == ["192.168.0.2:4647", "192.168.0.1:4647"]


def test_backups_take_over_after_a_full_lap_of_failures() -> None:
    lst = make_list(backups=("192.168.0.1:4647",))
    lst.set_discovered(make_servers(2))
    first = lst.pick()
    assert first is not None
    lst.notify_failed(first)
    second = lst.pick()
    assert second is not None and not second.backup
    lst.notify_failed(second)
    fallback = lst.pick()
    assert fallback is not None and fallback.backup
    # Still kept after the discovered ones.
    assert lst.servers[-1] == fallback


def test_single_discovered_server_failing_falls_back_to_backup() -> None:
    lst = make_list(backups=("192.168.0.1:4647",))
    (only,) = make_servers(1)
    lst.set_discovered([only])
    lst.notify_failed(only)
    picked = lst.pick()
    assert picked is not None and picked.backup


def test_success_on_a_discovered_server_ends_the_fallback() -> None:
    lst = make_list(backups=("192.168.0.1:4647",))
    (only,) = make_servers(1)
    lst.set_discovered([only])
    lst.notify_failed(only)
    lst.notify_ok(only)
    assert lst.pick() == only
    assert lst.healthy(only.address) is True


def test_new_discovered_set_ends_the_fallback() -> None:
    lst = make_list(backups=("192.168.0.1:4647",))
    servers = make_servers(2)
    lst.set_discovered(servers[:1])
    lst.notify_failed(servers[0])
    lst.set_discovered(servers)
    picked = lst.pick()
    assert picked is not None and not picked.backup


def test_backup_that_is_also_discovered_is_listed_once_as_discovered() -> None:
    (a,) = make_servers(1)
    lst = make_list(backups=(a.address, "192.168.0.1:4647", "192.168.0.1:4647"))
    lst.set_discovered([a])
    assert addresses(lst.servers) == [a.address, "192.168.0.1:4647"]
    assert lst.servers[0].backup is False


# -- leader-only services -----------------------------------------------------------


def test_leader_only_service_picks_the_elected_leader() -> None:
    lst = make_list("broker")
    servers = make_servers(3)
    lst.set_discovered(servers)
    lst.set_leader(servers[1].address)
    assert lst.leader_only is True
    assert lst.pick() == servers[1]


def test_other_services_ignore_the_leader() -> None:
    lst = make_list("state")
    servers = make_servers(3)
    lst.set_discovered(servers)
    lst.set_leader(servers[1].address)
    assert lst.pick() == lst.servers[0]
    assert lst.snapshot().leader is None


def test_no_leader_known_picks_the_front() -> None:
    lst = make_list("deployments")
    lst.set_discovered(make_servers(2))
    assert lst.pick() == lst.servers[0]


def test_leader_hint_overrides_until_discovery_says_otherwise() -> None:
    lst = make_list("broker")
    a, b, c = make_servers(3)
    lst.set_discovered([a, b, c])
    lst.set_leader(a.address)
    lst.follow_hint(b.address)
    assert lst.pick() == b
    # Discovery repeating the same leader does not cancel the hint.
    lst.set_leader(a.address)
    assert lst.pick() == b
    # A different leader from the election key does.
    lst.set_leader(c.address)
    assert lst.pick() == c
    assert lst.leader == c.address


def test_discovery_agreeing_with_the_hint_clears_it() -> None:
    lst = make_list("broker")
    a, b = make_servers(2)
    lst.set_discovered([a, b])
    lst.set_leader(a.address)
    lst.follow_hint(b.address)
    lst.set_leader(b.address)
    lst.set_leader(b.address)
    assert lst.pick() == b
    # No stale hint left behind: a later election result wins at once.
    lst.set_leader(a.address)
    assert lst.pick() == a


def test_failed_hinted_leader_drops_the_hint() -> None:
    lst = make_list("broker")
    a, b = make_servers(2)
    lst.set_discovered([a, b])
    lst.set_leader(a.address)
    lst.follow_hint(b.address)
    lst.notify_failed(b)
    assert lst.pick() == a


def test_failed_elected_leader_falls_back_to_front_until_revived() -> None:
    lst = make_list("broker", rng=ReversingRandom())
    a, b, c = make_servers(3)
    lst.set_discovered([a, b, c])  # order c, b, a
    lst.set_leader(b.address)
    lst.notify_failed(b)
    assert lst.pick() == c  # a follower answers with a hint
    lst.notify_ok(b)
    assert lst.pick() == b
    lst.notify_failed(b)
    lst.follow_hint(a.address)
    assert lst.pick() == a


def test_leader_missing_from_the_list_is_called_by_address() -> None:
    lst = make_list("broker")
    lst.set_discovered(make_servers(2))
    lst.set_leader("10.1.1.1:4647")
    picked = lst.pick()
    assert picked is not None and picked.address == "10.1.1.1:4647"
    assert picked.replica == "" and picked.backup is False


# -- snapshot ---------------------------------------------------------------------------


def test_snapshot_reports_order_health_flags_and_times() -> None:
    clock = VirtualClock(50.0)
    lst = make_list("broker", backups=("192.168.0.1:4647",), clock=clock)
    servers = make_servers(3)
    lst.set_discovered(servers)
    leader = lst.servers[2].address
    lst.set_leader(leader)
    failed = lst.servers[0]
    clock.now = 75.0
    lst.notify_failed(failed)
    next_at = lst.schedule_rebalance(num_clients=10)
    clock.now = 80.0
    snap = lst.snapshot()
    assert snap.service == "broker"
    assert snap.taken_at == 80.0
    assert snap.next_rebalance == next_at
    assert [s.server for s in snap.servers] == list(lst.servers)
    by_address = {s.server.address: s for s in snap.servers}
    assert by_address[failed.address].healthy is False
    assert by_address[failed.address].last_failure == 75.0
    # The failed front rotated: the leader is now second, and in use.
    assert [s.server.address for s in snap.servers][1] == leader
    assert [s.leader for s in snap.servers] == [False, True, False, False]
    assert [s.in_use for s in snap.servers] == [False, True, False, False]
    assert snap.servers[-1].server.backup is True
    assert snap.servers[-1].server.rpc_version == 0
    assert {s.server.rpc_version for s in snap.servers[:3]} == {1}
    assert snap.leader == leader
    assert snap.generation == lst.generation


def test_bad_server_records_are_rejected() -> None:
    with pytest.raises(InvalidServer) as err:
        Server("")
    assert err.value.reason == "INVALID_SERVER"
    with pytest.raises(InvalidServer):
        Server(" 10.0.0.1:1")
    with pytest.raises(InvalidServer):
        Server("10.0.0.1:1", rpc_version=-1)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"min_reuse": 0},
        {"jitter_fraction": -0.1},
        {"jitter_fraction": 1.5},
        {"new_conns_per_sec_per_server": 0},
        {"version_warning_interval": -1},
        {"rpc_version": 0},
        {"services": ("state", "state")},
        {"services": ("",)},
    ],
)
def test_bad_config_is_rejected(kwargs: dict) -> None:
    with pytest.raises(InvalidArgument) as err:
        ProxyConfig(**kwargs)
    assert err.value.reason == "INVALID_ARGUMENT"


def test_config_defaults() -> None:
    config = ProxyConfig()
    assert config.min_reuse == 120.0
    assert config.jitter_fraction == 0.5
    assert config.new_conns_per_sec_per_server == 64
    assert config.version_warning_interval == 3 * 3600
    assert config.leader_only_services == {"broker", "deployments"}


# -- deposed leaders ----------------------------------------------------------


def test_a_follower_hint_naming_a_deposed_leader_is_ignored() -> None:
    """The election key said the leader is gone: a follower still hinting at
    it (its view lags) is not followed, and leader-only calls avoid it."""
    lst = make_list("broker", rng=ReversingRandom())
    a, b, c = make_servers(3)
    lst.set_discovered([a, b, c])  # order c, b, a
    lst.set_leader(c.address)
    lst.set_leader(None)  # c's lease is gone; nobody leads yet
    assert lst.deposed == {c.address}
    assert lst.pick() == b  # the front is c: skipped while deposed
    assert lst.follow_hint(c.address, source=b.address) is False
    assert lst.leader is None and lst.pick() == b
    # A hint naming anyone else is followed as before.
    assert lst.follow_hint(a.address, source=b.address) is True
    assert lst.pick() == a


def test_the_known_leader_denying_is_believed_even_about_a_deposed_one() -> None:
    lst = make_list("broker")
    a, b = make_servers(2)
    lst.set_discovered([a, b])
    lst.set_leader(a.address)
    lst.set_leader(b.address)  # a deposed; discovery then lags a's re-election
    assert lst.follow_hint(a.address, source=b.address) is True
    assert lst.pick() == a


def test_re_election_ends_deposition() -> None:
    lst = make_list("broker")
    a, b = make_servers(2)
    lst.set_discovered([a, b])
    lst.set_leader(a.address)
    lst.set_leader(b.address)
    lst.set_leader(a.address)
    assert lst.deposed == {b.address}
    assert lst.pick() == a


# -- leader hints carry the term: a stale hint (older term than the elected
# leader the list knows) does not bounce calls back to a deposed leader.


def _broker_list() -> tuple[ServerList, list[Server]]:
    lst = ServerList("broker", ProxyConfig(), lambda: 1000.0, random.Random(7))
    servers = [Server(f"10.0.0.{i}:4647", f"r{i}", 1) for i in range(4)]
    lst.set_discovered(servers)
    return lst, servers


def test_hint_of_an_older_term_is_ignored() -> None:
    lst, (a, b, _, _) = _broker_list()
    lst.set_leader(b.address, 20)
    lst.follow_hint(a.address, 12)  # a replica that has not seen the election
    assert lst.pick() == b


def test_hint_of_a_newer_term_or_without_a_term_is_followed() -> None:
    lst, (a, b, c, d) = _broker_list()
    lst.set_leader(b.address, 20)
    lst.follow_hint(c.address, 25)
    assert lst.pick() == c
    lst.set_leader(a.address, 30)
    lst.follow_hint(d.address)  # an old replica that sends no term: trusted
    assert lst.pick() == d
    lst.follow_hint(b.address)  # ... unless it names a leader known deposed
    assert lst.pick() == d
