"""Free loopback ports for tests, benchmarks and `drover dev`."""

from __future__ import annotations

import socket


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (the usual bind-to-0 race applies)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


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
