"""`drover dev` supervises: a child that dies is logged and restarted with
backoff; ports follow one rule; only a listener makes a port busy."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys

import pytest

from drover.dev.ports import ephemeral_ports, free_port, port_holders, port_in_use
from drover.dev.supervisor import (
    HIGHEST_OFFSET,
    LOWEST_OFFSET,
    MAX_REPLICAS,
    MIN_OFFSETS,
    SERVICES,
    Backoff,
    ChildSpec,
    DevLayout,
    PortsBusy,
    Supervisor,
    free_layout,
    layout_offsets,
)

SLEEPER = ChildSpec("broker-0", (sys.executable, "-c", "import time; time.sleep(60)"))


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _supervisor(clock: Clock, lines: list[str]) -> Supervisor:
    return Supervisor(log=lines.append, clock=clock, stop_timeout=1.0,
                      backoff=Backoff(first=0.5, cap=2.0, reset_after=30.0))


def test_a_child_killed_is_logged_and_restarted_after_its_backoff() -> None:
    clock, lines = Clock(), list[str]()
    sup = _supervisor(clock, lines)
    try:
        sup._spawn(SLEEPER)
        first = sup.children["broker-0"]
        sup.supervise()
        assert lines == []  # alive: nothing to do
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
        sup.supervise()
        assert lines == ["broker-0 exited (killed by SIGKILL); restarting in 0.5s"]
        clock.now += 0.4
        sup.supervise()
        assert sup.children["broker-0"] is first  # not before its delay
        clock.now += 0.1
        sup.supervise()
        second = sup.children["broker-0"]
        assert second is not first and second.poll() is None
        assert lines[-1] == f"broker-0 restarted (pid {second.pid}, restart 1)"
        # dies again at once: the delay doubles, up to the cap
        delays = []
        for _ in range(3):
            os.kill(sup.children["broker-0"].pid, signal.SIGKILL)
            sup.children["broker-0"].wait()
            sup.supervise()
            delays.append(lines[-1].rsplit(" ", 1)[1])
            clock.now += 5
            sup.supervise()
        assert delays == ["1s", "2s", "2s"]
        # one that ran past reset_after starts again from the first delay
        clock.now += 31
        os.kill(sup.children["broker-0"].pid, signal.SIGTERM)
        sup.children["broker-0"].wait()
        sup.supervise()
        assert lines[-1] == "broker-0 exited (killed by SIGTERM); restarting in 0.5s"
    finally:
        sup.stop()


def test_a_stopped_suite_restarts_nothing() -> None:
    clock, lines = Clock(), list[str]()
    sup = _supervisor(clock, lines)
    sup._spawn(SLEEPER)
    sup.stop()
    clock.now += 10
    sup.supervise()
    assert sup.children == {} and lines == []


def test_metrics_ports_follow_the_service_ports_in_order() -> None:
    lay = DevLayout()
    assert [lay.port(s) for s in ("proxy", "state", "broker", "deployments")] == \
        [7100, 7101, 7102, 7103]
    assert [lay.metrics_port(s) for s in ("proxy", "state", "broker", "deployments")] == \
        [7200, 7201, 7202, 7203]
    assert lay.address("broker", 1) == "127.0.0.1:7106" and lay.metrics_port("broker", 1) == 7206
    shifted = lay.shifted(1000)
    assert shifted.port("proxy") == 8100 and shifted.metrics_port("proxy") == 8200
    ports = lay.ports(1, {"broker": 2})
    assert ports[7106] == "broker-1" and ports[7206] == "broker-1 metrics"
    assert ports[7103] == "deployments" and 7107 not in ports


def test_time_wait_sockets_do_not_make_a_port_busy() -> None:
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert port_in_use("127.0.0.1", port)  # a listener holds it
        client = socket.create_connection(("127.0.0.1", port))
        conn, _ = listener.accept()
        conn.close()  # the server side closes first: its end goes to TIME_WAIT
        client.recv(1)
        client.close()
    assert _time_wait_on(port), "the test did not leave a TIME_WAIT socket"
    assert not port_in_use("127.0.0.1", port)


def _time_wait_on(port: int) -> bool:
    with open("/proc/net/tcp") as f:
        rows = [line.split() for line in f.readlines()[1:]]
    return any(int(r[1].split(":")[1], 16) == port and r[3] == "06" for r in rows)


def _holding(port: int, seconds: float) -> subprocess.Popen[bytes]:
    """A process named like a suite's child listening on ``port`` for a while,
    orphaned in the sense that matters: its parent is no `drover dev`."""
    code = ("import socket, sys, time; s = socket.socket(); "
            "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
            f"s.bind(('127.0.0.1', {port})); s.listen(); print('up', flush=True); "
            f"time.sleep({seconds})")
    proc = subprocess.Popen([sys.executable, "-c", code, "drover-child"], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"up\n"
    return proc


def test_ports_held_by_a_killed_suites_children_are_waited_for() -> None:
    """Started right after a suite was killed, `drover dev` waits for its
    children (sent SIGTERM, still shutting down) to let go of the ports."""
    lines: list[str] = []
    port = free_port()
    holder = _holding(port, 1.5)
    try:
        assert [h.pid for h in port_holders(port)] == [holder.pid]
        Supervisor(log=lines.append).wait_for_ports({port: "state"})
        assert holder.wait(5) == 0 and not port_in_use("127.0.0.1", port)
        assert any("waiting up to" in line for line in lines), lines
    finally:
        holder.kill()
        holder.wait()


def test_ports_held_by_anything_else_are_refused_at_once_naming_the_holder() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        with pytest.raises(PortsBusy) as err:
            Supervisor(log=print).wait_for_ports({port: "proxy"})
    text = str(err.value)
    assert f"port {port} (proxy) already in use on 127.0.0.1 by pid {os.getpid()}" in text
    assert text.endswith("add --port-offset N")


@pytest.mark.parametrize("members", [1, 3])
def test_a_free_layout_keeps_every_port_below_the_kernels_ephemeral_range(members: int) -> None:
    """A client's connection takes its local port from the ephemeral range:
    a suite port inside it could be taken between the check and the bind."""
    every = {s: MAX_REPLICAS for s in SERVICES}
    highest = max(DevLayout().ports(members, every))
    offsets = layout_offsets(members, 32768)  # Linux's default range
    assert len(offsets) > 5000 and max(offsets) + highest < 32768
    # A range starting too low leaves no room: anywhere, as before.
    assert layout_offsets(members, 25000) == range(LOWEST_OFFSET, HIGHEST_OFFSET)
    # And this machine's own draws.
    low = ephemeral_ports()[0]
    for _ in range(30):
        offset, lay = free_layout(members)
        assert offset in layout_offsets(members, low)
        assert max(lay.ports(members, every)) < low or low - highest < LOWEST_OFFSET + MIN_OFFSETS
