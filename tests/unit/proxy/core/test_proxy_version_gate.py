"""Servers of a newer rpc version are skipped, with a warning at most every 3 h each."""

from __future__ import annotations

import random

from virtual_clock import VirtualClock

from drover.proxy.config import ProxyConfig
from drover.proxy.core.server import Server
from drover.proxy.core.server_list import ServerList
from drover.proxy.core.version_gate import VersionGate, WarningThrottle

HOUR = 3600.0


def test_throttle_allows_once_per_interval_per_key() -> None:
    clock = VirtualClock()
    throttle = WarningThrottle(10.0, clock)
    assert throttle.allow("a") is True
    assert throttle.allow("a") is False
    assert throttle.allow("b") is True
    clock.now = 9.99
    assert throttle.allow("a") is False
    clock.now = 10.0
    assert throttle.allow("a") is True
    assert throttle.allow("b") is True
    throttle.forget_before(10.0)
    assert len(throttle) == 2
    throttle.forget_before(10.5)
    assert len(throttle) == 0


def test_gate_admits_equal_older_and_unknown_versions() -> None:
    gate = VersionGate(ProxyConfig(rpc_version=2), VirtualClock())
    servers = [
        Server("a:1", "a", 1),
        Server("b:1", "b", 2),
        Server("c:1", "c", 3),
        Server.backup_at("d:1"),
    ]
    admission = gate.admit(servers, "state")
    assert [s.address for s in admission.admitted] == ["a:1", "b:1", "d:1"]
    assert [s.address for s in admission.skipped] == ["c:1"]
    assert len(admission.warnings) == 1
    assert "c:1" in admission.warnings[0]
    assert "rpc version 3" in admission.warnings[0]
    assert "state" in admission.warnings[0]


def test_warning_repeats_only_after_three_hours_per_server() -> None:
    clock = VirtualClock()
    config = ProxyConfig(rpc_version=1)
    lst = ServerList("state", config, clock, random.Random(0))
    current = Server("10.0.0.1:4647", "r1", 1)
    newer = Server("10.0.0.2:4647", "r2", 2)
    other_newer = Server("10.0.0.3:4647", "r3", 2)

    first = lst.set_discovered([current, newer])
    assert lst.servers == (current,)
    assert first.skipped == (newer,)
    assert len(first.warnings) == 1 and newer.address in first.warnings[0]

    clock.now = 1 * HOUR
    again = lst.set_discovered([current, newer, other_newer])
    assert again.skipped == (newer, other_newer)
    assert len(again.warnings) == 1 and other_newer.address in again.warnings[0]

    clock.now = 3 * HOUR - 1
    assert lst.set_discovered([current, newer, other_newer]).warnings == ()

    clock.now = 3 * HOUR
    late = lst.set_discovered([current, newer, other_newer])
    assert len(late.warnings) == 1 and newer.address in late.warnings[0]
    assert lst.servers == (current,)


def test_address_with_any_newer_record_is_skipped_whole() -> None:
    lst = ServerList("state", ProxyConfig(rpc_version=1), VirtualClock(), random.Random(0))
    old = Server("10.0.0.1:4647", "old", 1)
    upgraded = Server("10.0.0.1:4647", "new", 2)
    update = lst.set_discovered([old, upgraded])
    assert lst.servers == ()
    assert update.skipped == (upgraded,)


def test_newer_leader_is_not_picked() -> None:
    lst = ServerList("broker", ProxyConfig(rpc_version=1), VirtualClock(), random.Random(0))
    current = Server("10.0.0.1:4647", "r1", 1)
    newer = Server("10.0.0.2:4647", "r2", 2)
    lst.set_discovered([current, newer])
    lst.set_leader(newer.address)
    assert lst.pick() == current


def test_upgraded_proxy_admits_the_server() -> None:
    newer = Server("10.0.0.2:4647", "r2", 2)
    lst = ServerList("state", ProxyConfig(rpc_version=2), VirtualClock(), random.Random(0))
    update = lst.set_discovered([newer])
    assert lst.servers == (newer,)
    assert update.warnings == ()
