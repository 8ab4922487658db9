"""Free loopback ports for tests, benchmarks and `drover dev`, and who
holds a port that is not free."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (the usual bind-to-0 race applies)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


#: Linux's default range of the ports it gives outgoing connections.
DEFAULT_EPHEMERAL = (32768, 60999)


def ephemeral_ports() -> tuple[int, int]:
    """The range the kernel draws outgoing connections' local ports from
    (``net.ipv4.ip_local_port_range``). A server port inside it can be taken
    by any client's connection between the moment it was found free and the
    moment the server binds it."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return DEFAULT_EPHEMERAL


def wait_for_port(host: str, port: int, timeout: float) -> bool:
    """Block until something accepts TCP connections on host:port, or timeout."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def port_in_use(host: str, port: int) -> bool:
    """True when ``host:port`` is held by a listener (or a bound socket).

    The bind test sets SO_REUSEADDR, as etcd and the gRPC servers do: the
    TIME_WAIT connections a suite stopped a moment ago leaves behind do not
    count, so `drover dev` starts again at once after a stop."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
        return False


@dataclass(frozen=True)
class Holder:
    """A process holding a TCP port: its pid, its command line, and whether
    it is a drover process orphaned by the suite that started it."""

    pid: int
    command: str
    orphan: bool


def port_holders(port: int) -> list[Holder]:
    """The processes with a socket bound to local ``port`` (from /proc; only
    those this user may inspect). Empty when only the kernel holds it, e.g.
    connections of a process that exited, still closing."""
    inodes = _socket_inodes(port)
    if not inodes:
        return []
    holders: list[Holder] = []
    for pid_dir in Path("/proc").iterdir():
        if not pid_dir.name.isdigit():
            continue
        if any(_link(fd) in inodes for fd in _fds(pid_dir)):
            holders.append(_holder(int(pid_dir.name)))
    return holders


def _fds(pid_dir: Path) -> list[Path]:
    try:
        return list((pid_dir / "fd").iterdir())
    except OSError:  # gone, or not ours to inspect
        return []


def _link(fd: Path) -> str:
    try:
        return os.readlink(fd)
    except OSError:  # closed meanwhile
        return ""


def _socket_inodes(port: int) -> set[str]:
    found: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if len(cols) > 9 and int(cols[1].rsplit(":", 1)[1], 16) == port and cols[9] != "0":
                found.add(f"socket:[{cols[9]}]")
    return found


def _holder(pid: int) -> Holder:
    def cmdline(p: int) -> str:
        try:
            raw = Path(f"/proc/{p}/cmdline").read_bytes()
        except OSError:
            return ""
        return raw.replace(b"\0", b" ").decode(errors="replace").strip()

    try:
        ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        ppid = 0
    command, parent = cmdline(pid), cmdline(ppid).split()
    # A child of a `drover dev` that was killed outlives it for as long as
    # its own shutdown takes (it was sent SIGTERM: process.die_with_parent).
    suite_parent = "dev" in parent and _drovers(parent)
    return Holder(pid=pid, command=command, orphan=_drovers(command.split()) and not suite_parent)


def _drovers(argv: list[str]) -> bool:
    """Whether a command line is drover's: `drover ...`, `python -m
    drover.cli.main ...`, or an etcd named drover-dev."""
    return any(os.path.basename(w) == "drover" or w.startswith(("drover.", "drover-"))
               for w in argv)


def busy_message(host: str, busy: list[tuple[int, str]], holders: list[Holder]) -> str:
    """One line: which ports of a suite are taken, by whom, and what to do."""
    ports = ", ".join(f"{port} ({what})" for port, what in busy[:4])
    more = " and more" if len(busy) > 4 else ""
    held = ""
    if holders:
        names = ", ".join(f"pid {h.pid} ({_short(h.command)})" for h in holders[:2])
        held = f" by {names}{' and others' if len(holders) > 2 else ''}"
    return (f"port{'s' if len(busy) > 1 else ''} {ports}{more} already in use on {host}{held}: "
            "another `drover dev` running? stop it, or add --port-offset N")


def _short(command: str, width: int = 40) -> str:
    words = command.split()
    text = " ".join([os.path.basename(words[0]), *words[1:]]) if words else "?"
    return text if len(text) <= width else text[: width - 3] + "..."
