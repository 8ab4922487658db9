"""Network faults between real processes: namespaces, a bridge, nftables.

A :class:`Net` makes a *hub* network namespace holding a bridge, and per
host (:meth:`Net.host`) a namespace joined to that bridge by a veth pair,
with an address on a test-only subnet (``10.213.0.0/24``) that exists only
inside these namespaces: nothing is added to the machine's own network, and
a test's hosts can reach nothing but each other. Commands run in a host's
namespace as managed processes (:meth:`Net.spawn`: start, SIGSTOP/SIGCONT,
kill). Between any two hosts:

* :meth:`Net.cut` -- a partition, both ways;
* :meth:`Net.drop` -- a one-way drop (``src``'s packets to ``dst`` vanish;
  ``dst``'s still arrive at ``src``);
* :meth:`Net.loss` -- random loss of ``percent`` % of the packets each way
  (between two hosts, or on every link with :meth:`Net.loss_everywhere`);
* :meth:`Net.heal` -- undo faults (between two hosts, or all).

Faults are nftables rules (``numgen random`` for loss) in the hosts' own
namespaces, rewritten atomically per host on every change. There is no
delay: these machines have no ``tc`` qdiscs (netem), so latency is not
modelled. Packets are dropped, never rejected: a cut looks like a real
partition (silence), not a refused connection.

The test process itself stays in the machine's namespace; :meth:`Net.forward`
gives it a loopback port relayed into a host's namespace (the relay's
upstream sockets are made inside it), so in-process clients (workers,
simulated nodes, recorders) act as that host and its faults apply to them.

Names: every namespace is ``dnf<pid>-<n>-<host>``, so :func:`sweep` can remove
what a killed run left behind (namespaces whose creating pid is gone) without
touching a concurrent run's. :meth:`Net.close` kills every process it started
and deletes every namespace, also when a test fails.

Needs root, ``ip`` (iproute2) and ``nft`` (the Debian ``nftables`` package).
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

__all__ = ["Host", "Net", "NsProcess", "available", "entered", "sweep"]

CLONE_NEWNET = 0x40000000
SUBNET = "10.213.0"
PREFIX = "dnf"
_NAME = re.compile(rf"^{PREFIX}(\d+)-")
_counter = itertools.count()
_libc = ctypes.CDLL("libc.so.6", use_errno=True)


def available() -> str:
    """Empty when this machine can run a :class:`Net`; else why not."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "nft"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed"
    return ""


def _run(*args: str, input: str | None = None) -> str:
    r = subprocess.run(list(args), input=input, capture_output=True, text=True, timeout=20)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def _setns(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns({path}): {os.strerror(err)}")
    finally:
        os.close(fd)


@contextlib.contextmanager
def entered(ns: str) -> Iterator[None]:
    """Run the block with this *thread* in namespace ``ns`` (sockets made
    inside stay in it for good); the thread's own namespace after. Empty
    ``ns``: no change."""
    if not ns:
        yield
        return
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        _setns(f"/var/run/netns/{ns}")
        try:
            yield
        finally:
            if _libc.setns(own, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "could not return to the own namespace")
    finally:
        os.close(own)


def _namespaces() -> list[str]:
    out = _run("ip", "netns", "list")
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _delete(ns: str) -> None:
    with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
        for pid in _run("ip", "netns", "pids", ns).split():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)
    with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
        _run("ip", "netns", "delete", ns)


def sweep() -> list[str]:
    """Delete the namespaces (and their processes) of runs that are gone:
    ``dnf<pid>-...`` whose ``pid`` no longer exists. Returns their names."""
    gone = []
    for ns in _namespaces():
        m = _NAME.match(ns)
        if m and not os.path.exists(f"/proc/{m.group(1)}"):
            _delete(ns)
            gone.append(ns)
    return gone


@dataclass
class NsProcess:
    """A command running in a host's namespace (``ip netns exec`` execs it:
    the pid is the command's own)."""

    host: Host
    args: Sequence[str]
    log: str | None = None
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> NsProcess:
        out = open(self.log, "ab") if self.log else subprocess.DEVNULL
        try:
            self.proc = subprocess.Popen(
                ["setpriv", "--pdeathsig", "KILL", "--", "ip", "netns", "exec", self.host.ns,
                 *self.args], stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        finally:
            if not isinstance(out, int):
                out.close()
        return self

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: int) -> None:
        if self.running:
            assert self.proc is not None
            os.kill(self.proc.pid, sig)

    def pause(self) -> None:
        self.signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.signal(signal.SIGCONT)

    def kill(self) -> None:
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait(10)

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM, then SIGKILL after ``grace`` seconds."""
        self.signal(signal.SIGCONT)  # a frozen process cannot act on SIGTERM
        self.signal(signal.SIGTERM)
        if self.proc is not None:
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self.kill()


@dataclass(frozen=True)
class Host:
    name: str
    ns: str
    ip: str


@dataclass(frozen=True)
class _Rule:
    """``src``'s packets to ``dst`` are dropped (``percent`` % of them, at
    random, below 100). ``dst`` empty: to every host."""

    src: str
    dst: str
    percent: int = 100


@dataclass
class Net:
    """A bridge and hosts on it; see the module docstring. A context manager:
    leaving it (also by an exception) tears everything down."""

    hosts: dict[str, Host] = field(default_factory=dict)
    procs: list[NsProcess] = field(default_factory=list)
    rules: set[_Rule] = field(default_factory=set)
    tag: str = ""
    _forwards: list[_Relay] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.tag = f"{PREFIX}{os.getpid()}-{next(_counter)}"
        self.hub = f"{self.tag}-hub"

    def __enter__(self) -> Net:
        sweep()
        try:
            _run("ip", "netns", "add", self.hub)
            _run("ip", "-n", self.hub, "link", "add", "br0", "type", "bridge")
            _run("ip", "-n", self.hub, "link", "set", "br0", "up")
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def host(self, name: str) -> Host:
        """A new host: its namespace, veth to the bridge, address, lo up."""
        assert name not in self.hosts, name
        n = len(self.hosts) + 2
        assert n < 255, "a /24 holds at most 252 hosts"
        h = Host(name, f"{self.tag}-{name}", f"{SUBNET}.{n}")
        _run("ip", "netns", "add", h.ns)
        self.hosts[name] = h
        # Both ends are made directly in their namespaces: the machine's own
        # namespace never holds (or names) an interface of the test.
        _run("ip", "link", "add", "eth0", "netns", h.ns, "type", "veth", "peer", "name",
             f"v{n}", "netns", self.hub)
        _run("ip", "-n", self.hub, "link", "set", f"v{n}", "master", "br0", "up")
        _run("ip", "-n", h.ns, "addr", "add", f"{h.ip}/24", "dev", "eth0")
        _run("ip", "-n", h.ns, "link", "set", "eth0", "up")
        _run("ip", "-n", h.ns, "link", "set", "lo", "up")
        self._apply(h)
        return h

    def spawn(self, host: Host, args: Sequence[str], log: str | None = None) -> NsProcess:
        p = NsProcess(host, args, log).start()
        self.procs.append(p)
        return p

    # -- faults ------------------------------------------------------------

    def cut(self, a: Host, b: Host) -> None:
        """Partition: nothing passes between ``a`` and ``b``, either way."""
        self._add(_Rule(a.name, b.name), _Rule(b.name, a.name))

    def drop(self, src: Host, dst: Host) -> None:
        """One way: ``src``'s packets to ``dst`` are dropped (a TCP
        connection between them then stalls both ways, as a real one-way
        fault does: its acknowledgements never arrive)."""
        self._add(_Rule(src.name, dst.name))

    def loss(self, a: Host, b: Host, percent: int) -> None:
        """``percent`` % of the packets between ``a`` and ``b`` (each way)
        dropped at random."""
        assert 0 < percent < 100, percent
        self._add(_Rule(a.name, b.name, percent), _Rule(b.name, a.name, percent))

    def loss_everywhere(self, percent: int) -> None:
        """``percent`` % of every host's outgoing packets dropped at random."""
        assert 0 < percent < 100, percent
        self._add(*(_Rule(h, "", percent) for h in self.hosts))

    def heal(self, a: Host | None = None, b: Host | None = None) -> None:
        """Undo the faults between ``a`` and ``b`` (both ways), or all."""
        if a is None or b is None:
            gone = set(self.rules)
        else:
            pair = {a.name, b.name}
            gone = {r for r in self.rules if {r.src, r.dst} == pair}
        self.rules -= gone
        for name in {r.src for r in gone} | {r.dst for r in gone if r.dst}:
            self._apply(self.hosts[name])

    def _add(self, *rules: _Rule) -> None:
        self.rules |= set(rules)
        for name in {r.src for r in rules} | {r.dst for r in rules if r.dst}:
            self._apply(self.hosts[name])

    def _apply(self, h: Host) -> None:
        """Rewrite ``h``'s fault table in one nft transaction: drops of what
        it sends (output) and of what it receives from a host whose packets
        to it are dropped (input, so a fault holds even for traffic that
        bypasses the sender's rules, e.g. a relay's)."""
        out, inp = [], []
        for r in sorted(self.rules, key=lambda r: (r.src, r.dst, r.percent)):
            chance = f"numgen random mod 100 < {r.percent} " if r.percent < 100 else ""
            if r.src == h.name:
                match = f"ip daddr {self.hosts[r.dst].ip} " if r.dst else 'oifname "eth0" '
                out.append(f"    {match}{chance}drop")
            elif r.dst == h.name and r.percent == 100:
                inp.append(f"    ip saddr {self.hosts[r.src].ip} drop")
        script = "\n".join([
            "table inet drover_fault", "delete table inet drover_fault",
            "table inet drover_fault {",
            "  chain input {", "    type filter hook input priority 0; policy accept;", *inp,
            "  }",
            "  chain output {", "    type filter hook output priority 0; policy accept;", *out,
            "  }", "}", ""])
        _run("ip", "netns", "exec", h.ns, "nft", "-f", "-", input=script)

    # -- reaching the hosts from the test ---------------------------------

    def forward(self, via: Host, target: str) -> str:
        """A ``127.0.0.1:port`` (in the test's own namespace) relayed to
        ``target`` (``ip:port``) from inside ``via``'s namespace."""
        relay = _Relay(via.ns, target)
        self._forwards.append(relay)
        return relay.address

    def reachable(self, via: Host, target: str, timeout: float) -> bool:
        """Whether something in ``via``'s namespace can connect to ``target``
        within ``timeout`` seconds (polled)."""
        host, port = target.rsplit(":", 1)
        deadline = time.monotonic() + timeout
        while True:
            with entered(via.ns):
                s = socket.socket()
            try:
                s.settimeout(0.5)
                s.connect((host, int(port)))
                return True
            except OSError:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.1)
            finally:
                s.close()

    def close(self) -> None:
        """Every relay closed, every process killed, every namespace gone."""
        for relay in self._forwards:
            relay.close()
        self._forwards.clear()
        for p in self.procs:
            with contextlib.suppress(Exception):
                p.kill()
        self.procs.clear()
        for h in self.hosts.values():
            _delete(h.ns)
        self.hosts.clear()
        _delete(self.hub)


class _Relay:
    """TCP from a loopback port here to ``target`` from namespace ``ns``:
    a thread per direction per connection."""

    def __init__(self, ns: str, target: str) -> None:
        self.ns = ns
        host, port = target.rsplit(":", 1)
        self.target = (host, int(port))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.listener.getsockname()[1]}"
        self.socks: list[socket.socket] = []
        self.closed = False
        threading.Thread(target=self._accept, daemon=True, name=f"relay-{target}").start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                down, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._connect, args=(down,), daemon=True).start()

    def _connect(self, down: socket.socket) -> None:
        with entered(self.ns):
            up = socket.socket()
        self.socks += [down, up]
        try:
            up.settimeout(5)
            up.connect(self.target)
            up.settimeout(None)
        except OSError:
            down.close()
            up.close()
            return
        for s in (up, down):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=self._pump, args=(up, down), daemon=True).start()
        self._pump(down, up)

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.closed = True
        self.listener.close()
        for s in self.socks:
            with contextlib.suppress(OSError):
                s.close()
