"""ServerLists: all services at one membership revision, and the ListServers snapshot."""

from __future__ import annotations

import random

import pytest
from virtual_clock import VirtualClock

from drover.proxy.config import ProxyConfig
from drover.proxy.core.server import Server
from drover.proxy.core.server_lists import ServerLists
from drover.proxy.errors import InvalidRevision, UnknownService


def servers(prefix: str, n: int, version: int = 1) -> list[Server]:
    return [Server(f"{prefix}{i}:4647", f"{prefix}{i}", version) for i in range(n)]


def make(clock: VirtualClock | None = None, **kwargs: object) -> ServerLists:
    return ServerLists(ProxyConfig(), clock or VirtualClock(), random.Random(5), **kwargs)  # type: ignore[arg-type]


def test_membership_updates_every_list_and_records_the_revision() -> None:
    lists = make()
    assert lists.services == ("state", "broker", "deployments")
    assert lists.applied_revision == 0
    update = lists.apply_membership(
        42,
        {"state": servers("s", 3), "broker": servers("b", 2), "proxy": servers("p", 2)},
    )
    assert update.applied is True
    assert lists.applied_revision == 42
    assert sorted(s.address for s in lists.get("state").servers) == sorted(
        s.address for s in servers("s", 3)
    )
    assert len(lists.get("broker").servers) == 2
    # A service missing from membership has no members.
    assert lists.get("deployments").servers == ()
    assert set(update.updates) == {"state", "broker", "deployments"}


def test_older_revision_is_ignored() -> None:
    lists = make()
    lists.apply_membership(10, {"state": servers("s", 2)})
    update = lists.apply_membership(9, {"state": servers("x", 1)})
    assert update.applied is False
    assert update.updates == {}
    assert lists.applied_revision == 10
    assert len(lists.get("state").servers) == 2


def test_same_revision_is_applied_again() -> None:
    lists = make()
    lists.apply_membership(10, {"state": servers("s", 2)})
    assert lists.apply_membership(10, {"state": servers("s", 3)}).applied is True
    assert len(lists.get("state").servers) == 3


def test_negative_revision_is_rejected() -> None:
    with pytest.raises(InvalidRevision) as err:
        make().apply_membership(-1, {})
    assert err.value.reason == "INVALID_REVISION"


def test_one_warning_per_server_across_lists() -> None:
    lists = make()
    newer = Server("n:4647", "n", 9)
    update = lists.apply_membership(1, {"state": [newer], "broker": [newer]})
    assert len(update.warnings) == 1
    assert lists.get("state").servers == ()
    assert lists.get("broker").servers == ()


def test_unknown_service_is_not_found() -> None:
    lists = make()
    with pytest.raises(UnknownService) as err:
        lists.get("nope")
    assert err.value.reason == "UNKNOWN_SERVICE"
    assert err.value.metadata == {"service": "nope"}
    with pytest.raises(UnknownService):
        lists.snapshot("nope")


def test_backups_for_an_unknown_service_are_rejected() -> None:
    with pytest.raises(UnknownService):
        make(backups={"stat": ["10.0.0.1:4647"]})


def test_backups_go_to_their_service() -> None:
    lists = make(backups={"state": ["192.168.0.1:4647"]})
    lists.apply_membership(3, {"state": servers("s", 2)})
    assert lists.get("state").servers[-1] == Server.backup_at("192.168.0.1:4647")
    assert lists.get("broker").servers == ()


def test_snapshot_of_all_or_one_service() -> None:
    clock = VirtualClock(7.0)
    lists = make(clock)
    lists.apply_membership(8, {"state": servers("s", 2), "broker": servers("b", 1)})
    lists.get("broker").set_leader("b0:4647")
    everything = lists.snapshot()
    assert [s.service for s in everything.lists] == ["state", "broker", "deployments"]
    assert everything.revision == 8
    assert everything.taken_at == 7.0
    only = lists.snapshot("broker")
    assert [s.service for s in only.lists] == ["broker"]
    assert only.lists[0].leader == "b0:4647"
    assert only.lists[0].servers[0].leader is True


def test_due_for_rebalance() -> None:
    clock = VirtualClock(0.0)
    lists = make(clock)
    assert lists.due_for_rebalance() == ()
    lists.get("state").schedule_rebalance(num_clients=1)
    clock.now = 119.0
    assert lists.due_for_rebalance() == ()
    clock.now = 180.0
    assert lists.due_for_rebalance() == ("state",)
