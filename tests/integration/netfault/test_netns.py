"""The network fault harness itself (drover.dev.netns): two hosts, a TCP
echo server on one, clients on the other; cut, one-way, loss, heal, and a
teardown that leaves nothing behind."""

from __future__ import annotations

import contextlib
import random
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest
from netns_required import needs_netns

from drover.dev import netns
from drover.dev.netns import Host, Net, entered

pytestmark = [pytest.mark.netfault,
              needs_netns]

PORT = 7007
ECHO = """
import socket, threading
srv = socket.create_server(("0.0.0.0", PORT))
def serve(c):
    with c:
        while data := c.recv(4096):
            c.sendall(data)
while True:
    threading.Thread(target=serve, args=(srv.accept()[0],), daemon=True).start()
""".replace("PORT", str(PORT))


@pytest.fixture
def pair() -> Iterator[tuple[Net, Host, Host]]:
    with Net() as net:
        a, b = net.host("a"), net.host("b")
        net.spawn(b, [sys.executable, "-c", ECHO])
        assert net.reachable(a, f"{b.ip}:{PORT}", 10), "the echo server did not start"
        yield net, a, b


def echo(via: Host, to: Host, timeout: float = 1.0) -> bool:
    """One round trip on a new connection from ``via``: True if it came back."""
    with entered(via.ns):
        s = socket.socket()
    with s:
        s.settimeout(timeout)
        try:
            s.connect((to.ip, PORT))
            s.sendall(b"ping")
            return s.recv(4) == b"ping"
        except OSError:
            return False


def udp_through(net: Net, src: Host, dst: Host, n: int) -> int:
    """Datagrams of ``n`` sent from ``src`` that arrive at ``dst``."""
    with entered(dst.ns):
        rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    with entered(src.ns):
        tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    with rx, tx:
        rx.bind((dst.ip, 0))
        got = 0

        def drain(wait: float) -> int:
            n = 0
            rx.settimeout(wait)
            with contextlib.suppress(TimeoutError):
                while True:
                    rx.recv(64)
                    n += 1
            return n

        for i in range(n):
            with contextlib.suppress(PermissionError):  # dropped on output
                tx.sendto(str(i).encode(), (dst.ip, rx.getsockname()[1]))
            if i % 20 == 19:  # never more in flight than the socket buffers
                got += drain(0.01)
        return got + drain(0.5)


def test_cut_then_heal(pair: tuple[Net, Host, Host]) -> None:
    net, a, b = pair
    assert echo(a, b)
    net.cut(a, b)
    assert not echo(a, b)
    assert udp_through(net, b, a, 20) == 0
    net.heal(a, b)
    assert echo(a, b)


def test_an_open_connection_stalls_while_cut(pair: tuple[Net, Host, Host]) -> None:
    net, a, b = pair
    with entered(a.ns):
        s = socket.socket()
    with s:
        s.settimeout(1.0)
        s.connect((b.ip, PORT))
        net.cut(a, b)
        s.sendall(b"ping")
        with pytest.raises(TimeoutError):
            s.recv(4)
        net.heal()
        s.settimeout(5.0)  # TCP retransmits the ping once healed
        assert s.recv(4) == b"ping"


def test_one_way(pair: tuple[Net, Host, Host]) -> None:
    net, a, b = pair
    net.drop(a, b)
    assert udp_through(net, a, b, 20) == 0
    assert udp_through(net, b, a, 20) == 20
    assert not echo(a, b)  # TCP needs both ways
    net.heal(b, a)
    assert udp_through(net, a, b, 20) == 20


def test_loss_rate_roughly_right(pair: tuple[Net, Host, Host]) -> None:
    net, a, b = pair
    net.loss(a, b, 30)
    got = udp_through(net, a, b, 1000)
    assert 600 < got < 800, got  # 700 expected; 5 sigma is about +-72
    net.heal()
    net.loss_everywhere(50)
    got = udp_through(net, b, a, 1000)
    assert 400 < got < 600, got
    net.heal()
    assert udp_through(net, a, b, 200) == 200


def test_processes_pause_and_die(pair: tuple[Net, Host, Host]) -> None:
    net, a, b = pair
    server = net.procs[0]
    server.pause()
    assert not echo(a, b)
    server.resume()
    assert echo(a, b, timeout=5.0)
    server.kill()
    assert not server.running
    assert not echo(a, b)


def test_forward_reaches_a_host_from_here(pair: tuple[Net, Host, Host]) -> None:
    net, a, b = pair
    address = net.forward(a, f"{b.ip}:{PORT}")
    host, port = address.split(":")
    with socket.create_connection((host, int(port)), timeout=2) as s:
        s.sendall(b"ping")
        assert s.recv(4) == b"ping"
        net.cut(a, b)  # the relay's upstream is in a: the cut applies to it
        s.settimeout(1.0)
        s.sendall(b"pong")
        with pytest.raises(TimeoutError):
            s.recv(4)


def test_teardown_leaves_no_namespace() -> None:
    with Net() as net:
        a = net.host("a")
        p = net.spawn(a, ["sleep", "60"])
        names = [net.hub, a.ns]
    assert not any(n in netns._namespaces() for n in names)
    assert not p.running
    with pytest.raises(RuntimeError), Net() as net:
        names = [net.hub, net.host("b").ns]
        raise RuntimeError("a failing test")
    assert not any(n in netns._namespaces() for n in names)


def test_sweep_removes_only_dead_runs() -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    left = f"{netns.PREFIX}{dead.pid}-0-hub"
    mine = f"{netns.PREFIX}{random.randrange(10**6)}x"  # no pid: never swept
    subprocess.run(["ip", "netns", "add", left], check=True)
    subprocess.run(["ip", "netns", "add", mine], check=True)
    try:
        with Net() as net:
            net.host("a")
            assert left in netns.sweep() or left not in netns._namespaces()
            assert net.hub in netns._namespaces()
        assert left not in netns._namespaces()
        assert mine in netns._namespaces()
    finally:
        for n in (left, mine):
            subprocess.run(["ip", "netns", "delete", n], capture_output=True)
