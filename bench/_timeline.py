"""What a long scale run records over time, for its table and its plot.

A :class:`Timeline` samples, every ``period`` seconds on a thread of its
own while the benchmark's phases run: the bench jobs' allocations placed
and running (their summaries, as the phases read them), the resident set
of every process of the suite (from /proc), etcd's database size (its own
``etcd_mvcc_db_total_size_in_bytes``) and what a user waits for the first
page of ``drover job list`` and ``drover alloc list`` (ListJobs and
ListAllocations of one page through the proxy, timed), and during the
rolling update the new version's healthy allocations, the machine's load
average and its available memory. The phase a sample belongs to is whatever
the run last :meth:`mark`-ed. Below ``min_available`` bytes of available
memory the timeline says so (:meth:`check` raises): a run that would push
the machine into swap or the OOM killer stops first.

:func:`plot` draws placed and running over time (matplotlib, when
installed): a curve says more than a number about where a run slows down.
"""

from __future__ import annotations

import os
import re
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from drover.api.state.v1 import state_pb2

#: What a user's `job list` / `alloc list` asks for: one page.
FIRST_PAGE = 25


def rss_bytes(pid: int) -> int:
    """The process's resident set, 0 once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def mem_available() -> int:
    """The machine's available memory (MemAvailable), in bytes."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


class LowMemory(RuntimeError):
    """The machine's available memory fell below the run's floor."""


def metric(url: str, name: str) -> float:
    """The sum of the samples of one Prometheus metric (0.0 when absent)."""
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    rx = re.compile(rf"^{re.escape(name)}(\{{[^}}]*\}})? ")
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if rx.search(line))


class Timeline:
    """Samples of a run (module doc), taken every ``period`` seconds until
    :meth:`stop`."""

    def __init__(self, stub: Any, pids: Callable[[], dict[str, int]],
                 counts: Callable[[], dict[str, int]], etcd_metrics: str,
                 period: float = 2.0, min_available: int = 0) -> None:
        self._stub, self._pids, self._counts = stub, pids, counts
        self._min_available = min_available
        self.low_memory: str | None = None
        self._etcd_metrics, self._period = etcd_metrics, period
        self._t0 = time.monotonic()
        self._phase = "start"
        #: Each process's resident set before the run's allocations.
        self.rss_before = {name: rss_bytes(pid) for name, pid in pids().items()}
        self.samples: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="timeline", daemon=True)

    def start(self) -> Timeline:
        self._thread.start()
        return self

    def mark(self, phase: str) -> None:
        self._phase = phase

    def check(self) -> None:
        """Raise :class:`LowMemory` once a sample saw less than the floor."""
        if self.low_memory:
            raise LowMemory(self.low_memory)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        while not self._stop.wait(self._period):
            try:
                self.samples.append(self.sample())
            except Exception as e:  # a sample lost is no reason to stop the run
                self.samples.append({"t": round(time.monotonic() - self._t0, 1),
                                     "phase": self._phase, "error": str(e)[:200]})

    def sample(self) -> dict[str, Any]:
        t = round(time.monotonic() - self._t0, 1)
        counts = self._counts()
        t_jobs = time.perf_counter()
        self._stub.ListJobs(state_pb2.ListJobsRequest(namespace="*", page_size=FIRST_PAGE),
                            timeout=60)
        t_allocs = time.perf_counter()
        self._stub.ListAllocations(state_pb2.ListAllocationsRequest(
            namespace="*", page_size=FIRST_PAGE), timeout=60)
        done = time.perf_counter()
        available = mem_available()
        if available < self._min_available and not self.low_memory:
            self.low_memory = (f"{available / 2**30:.1f} GiB of memory available at "
                               f"t={t}s, under the floor of "
                               f"{self._min_available / 2**30:.1f} GiB: run stopped")
        return {
            "t": t, "phase": self._phase, **counts,
            "rss": {name: rss_bytes(pid) for name, pid in self._pids().items()},
            "etcd_db_bytes": int(metric(self._etcd_metrics,
                                        "etcd_mvcc_db_total_size_in_bytes")),
            "job_list_first_page_ms": round(1000 * (t_allocs - t_jobs), 1),
            "alloc_list_first_page_ms": round(1000 * (done - t_allocs), 1),
            "load_avg_1m": round(os.getloadavg()[0], 2),
            "mem_available_bytes": available,
        }

    def rss_per_alloc(self, allocs: int) -> dict[str, float]:
        """Bytes each process grew by, at its peak, per allocation of ``allocs``."""
        peak = self.summary()["rss_peak_bytes"]
        return {name: round(max(0, v - self.rss_before.get(name, 0)) / max(1, allocs), 1)
                for name, v in peak.items()}

    def summary(self) -> dict[str, Any]:
        """Peaks of the samples: RSS per process, etcd's DB size, and the
        first pages' latencies (median and worst)."""
        ok = [s for s in self.samples if "error" not in s]
        peak: dict[str, int] = {}
        for s in ok:
            for name, v in s["rss"].items():
                peak[name] = max(peak.get(name, 0), v)

        def spread(key: str) -> dict[str, float]:
            vals = sorted(s[key] for s in ok)
            return ({"p50": vals[len(vals) // 2], "max": vals[-1]} if vals else {})

        return {
            "samples": len(ok), "sample_errors": len(self.samples) - len(ok),
            "rss_peak_bytes": peak,
            "etcd_db_peak_bytes": max((s["etcd_db_bytes"] for s in ok), default=0),
            "load_avg_1m": spread("load_avg_1m"),
            "mem_available_min_bytes": min((s["mem_available_bytes"] for s in ok), default=0),
            "job_list_first_page_ms": spread("job_list_first_page_ms"),
            "alloc_list_first_page_ms": spread("alloc_list_first_page_ms"),
        }


def plot(runs: dict[str, list[dict[str, Any]]], out: Path) -> bool:
    """Placed, running and updated over time, one panel per run shape; False when
    matplotlib is not installed (the JSON holds the same samples)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, axes = plt.subplots(len(runs), 1, figsize=(8, 3 * len(runs)), squeeze=False)
    for ax, (label, samples) in zip(axes[:, 0], runs.items(), strict=True):
        ok = [s for s in samples if "error" not in s]
        ax.plot([s["t"] for s in ok], [s["placed"] for s in ok], label="placed")
        ax.plot([s["t"] for s in ok], [s["running"] for s in ok], label="running")
        ax.plot([s["t"] for s in ok], [s.get("updated", 0) for s in ok],
                label="new version healthy")
        ax.set_title(label)
        ax.set_xlabel("seconds from the first RegisterJob")
        ax.set_ylabel("allocations")
        ax.set_ylim(bottom=0)
        ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return True
