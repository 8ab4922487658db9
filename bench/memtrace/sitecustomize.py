"""Where a state replica's memory goes, for a soak (``bench/soak.py
--trace-state-memory DIR``): not drover's code, and never imported by it.

Python imports ``sitecustomize`` at start-up from any directory on
``PYTHONPATH``; the soak puts this one there for its child processes when
asked. In a process whose command line is ``... serve state ...`` (the
state replicas; every other process is left alone) it starts tracemalloc
(one frame per allocation: the cheapest) and a daemon thread that, every
``DROVER_MEMTRACE_EVERY`` seconds (default 300), writes
``<DIR>/state-<pid>-<minute>.txt``: the process's RSS, the traced total,
and the 40 source lines whose live allocations grew most since the first
snapshot, then the 40 largest. A bounded structure filling shows as lines
that stop growing between dumps; a leak as one that grows in every dump.
"""

from __future__ import annotations

import os
import threading
import time
import tracemalloc


def _is_state_replica() -> bool:
    try:
        with open("/proc/self/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
    except OSError:
        return False
    return b"serve" in argv and b"state" in argv


def _rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _dump(out: str, every: float) -> None:
    start = time.monotonic()
    first: tracemalloc.Snapshot | None = None
    while True:
        time.sleep(every)
        snap = tracemalloc.take_snapshot().filter_traces(
            [tracemalloc.Filter(False, tracemalloc.__file__)])
        first = first or snap
        minute = int((time.monotonic() - start) / 60)
        current, peak = tracemalloc.get_traced_memory()
        lines = [f"pid {os.getpid()} minute {minute} rss {_rss_mib():.1f} MiB traced "
                 f"{current / 2**20:.1f} MiB (peak {peak / 2**20:.1f})", "",
                 "grown since the first dump:"]
        lines += [str(s) for s in snap.compare_to(first, "lineno")[:40]]
        lines += ["", "largest:"]
        lines += [str(s) for s in snap.statistics("lineno")[:40]]
        path = os.path.join(out, f"state-{os.getpid()}-{minute:03d}.txt")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")


_OUT = os.environ.get("DROVER_MEMTRACE_DIR", "")
if _OUT and _is_state_replica():
    tracemalloc.start(1)
    threading.Thread(target=_dump, args=(_OUT, float(os.environ.get(
        "DROVER_MEMTRACE_EVERY", "300"))), daemon=True, name="memtrace").start()
