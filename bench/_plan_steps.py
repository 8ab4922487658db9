"""Where a plan's time goes in a scale run: each step's count and seconds.

Three sources, each the process's own measure (no timed assertion):

* the worker: ``drover worker --log-plan-timing N`` logs its running totals
  per step (:mod:`drover.worker.timing`: read, read_wait, snapshot, pack,
  submit, view_wait) to its own log; the last line counts;
* the state service: SubmitPlan's steps (validate, vouch, lock, judge,
  commit: the histogram ``drover.state.plan.step.duration``), and every
  etcd txn the replica made (``drover.state.etcd.txn.duration``), from its
  Prometheus endpoint;
* etcd: its backend commits and WAL fsyncs (its own histograms).

:func:`read` takes all of them at one moment; :func:`between` turns two
readings into a table row per step: calls, seconds in all, ms per call.
"""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path
from typing import Any

from drover.worker.timing import parse

_STATE_STEP = re.compile(
    r'^drover_state_plan_step_duration\w*_(count|sum)\{[^}]*step="(\w+)"[^}]*\} (\S+)')
_STATE_TXN = re.compile(r"^drover_state_etcd_txn_duration\w*_(count|sum)(\{[^}]*\})? (\S+)")
_ETCD = re.compile(
    r"^etcd_disk_(backend_commit|wal_fsync)_duration_seconds_(count|sum)(\{[^}]*\})? (\S+)")


def _scrape(url: str) -> list[str]:
    return urllib.request.urlopen(url, timeout=10).read().decode().splitlines()


def _add(out: dict[str, list[float]], name: str, kind: str, value: str) -> None:
    out.setdefault(name, [0.0, 0.0])[kind == "sum"] += float(value)


def worker_totals(log: Path) -> dict[str, list[float]]:
    """The worker's last logged totals per step: [count, seconds]."""
    last: dict[str, Any] | None = None
    try:
        for line in log.read_text(errors="replace").splitlines():
            got = parse(line)
            if got is not None:
                last = got
    except OSError:
        return {}
    return {f"worker.{s}": [float(v["n"]), float(v["s"])] for s, v in (last or {}).items()}


def read(worker_logs: list[Path], state_metrics: str,
         etcd_metrics: str) -> dict[str, list[float]]:
    """Every step's [count, seconds] so far (module doc), summed over the
    workers' logs."""
    out: dict[str, list[float]] = {}
    for log in worker_logs:
        for name, (n, s) in worker_totals(log).items():
            _add(out, name, "count", str(n))
            _add(out, name, "sum", str(s))
    for line in _scrape(state_metrics):
        if m := _STATE_STEP.match(line):
            _add(out, f"state.{m.group(2)}", m.group(1), m.group(3))
        elif m := _STATE_TXN.match(line):
            _add(out, "state.etcd_txn (every txn)", m.group(1), m.group(3))
    for line in _scrape(etcd_metrics):
        if m := _ETCD.match(line):
            _add(out, f"etcd.{m.group(1)}", m.group(2), m.group(4))
    return out


def between(before: dict[str, list[float]],
            after: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    """Per step, what happened between two :func:`read` s: calls, seconds in
    all, and ms per call."""
    out = {}
    for name, (n, s) in after.items():
        n0, s0 = before.get(name, [0.0, 0.0])
        calls, secs = int(n - n0), s - s0
        if calls:
            out[name] = {"calls": calls, "s": round(secs, 2),
                         "ms_per_call": round(1000 * secs / calls, 2)}
    return out


def table(steps: dict[str, dict[str, float]]) -> list[str]:
    """Markdown rows of :func:`between`'s steps."""
    rows = ["| step | calls | seconds | ms per call |", "|---|---|---|---|"]
    rows += [f"| {k} | {v['calls']:,} | {v['s']:,} | {v['ms_per_call']} |"
             for k, v in steps.items()]
    return rows
