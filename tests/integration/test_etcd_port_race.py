"""The etcd harness survives the bind-to-0 race: a port picked free and
taken before etcd binds it is picked again, for one server and for a
cluster (seen in CI: a three-member cluster's peer port was taken, and every
test on that session fixture errored)."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator

import pytest

import drover.dev.etcd as etcd_mod
from drover.dev.etcd import EtcdCluster, EtcdServer
from drover.dev.ports import free_port


@pytest.fixture
def taken() -> Iterator[socket.socket]:
    """A listening socket: its port is what the first pick returns."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    s.listen()
    try:
        yield s
    finally:
        s.close()


def _first_pick_taken(port: int, which: int) -> Callable[[str], int]:
    """``free_port`` whose ``which``-th call (0-based) answers the taken ``port``."""
    calls = [0]

    def pick(host: str = "127.0.0.1") -> int:
        n, calls[0] = calls[0], calls[0] + 1
        return port if n == which else free_port(host)

    return pick


def test_server_picks_again_when_its_port_was_taken(
    taken: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = taken.getsockname()[1]
    monkeypatch.setattr(etcd_mod, "free_port", _first_pick_taken(port, 0))
    server = EtcdServer(name="drover-race").start()
    try:
        assert server.running and server.healthy()
        assert server.client_port != port
    finally:
        server.stop()


def test_cluster_starts_again_when_a_peer_port_was_taken(
    taken: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = taken.getsockname()[1]
    # Member 2's peer port: the third member's second pick (client, peer, metrics).
    monkeypatch.setattr(etcd_mod, "free_port", _first_pick_taken(port, 7))
    cluster = EtcdCluster(size=3, name="drover-race").start()
    try:
        assert all(m.running for m in cluster.members)
        assert port not in {m.peer_port for m in cluster.members}
    finally:
        cluster.stop()


def test_given_ports_are_never_changed(taken: socket.socket) -> None:
    port = taken.getsockname()[1]
    server = EtcdServer(name="drover-race", client_port=port)
    with pytest.raises(RuntimeError, match="address already in use"):
        server.start(timeout=10)
    assert server.client_port == port
