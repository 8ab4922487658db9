"""The soak's record, its judges and its report (bench/soak.py runs it; `make bench` skips both).

Samples every 10 s: RSS and open fds per process (by name; a restarted
process keeps its name and gets a new pid), etcd's DB size (total and in
use, the largest of the members), call latency by method over the last
window, evaluations and deployments in flight. The judges at the end:

* flat: the least-squares slope over the last half of the run, per
  process over its longest same-pid stretch there (a restart is a new
  process), must stay under :data:`LIMITS` (RSS MiB/min, fds/min,
  DB in use MiB/min; fds also :data:`FDS_NOISE`);
* the workload's judges (nothing lost, deployments terminal, history
  linearizable) are bench/soak.py's, passed in as problems.

The report is a markdown file with the tables and PNG plots of memory,
latency and DB size over time (matplotlib).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

#: Slopes over the last half that count as growth (per minute).
LIMITS = {"rss_mib": 1.0, "fds": 0.5, "db_in_use_mib": 1.0}
#: Open fds move by a few as connections come and go (a client reconnecting
#: after a fault, a watch resuming): a slope is growth only if it also adds
#: up to more than this many fds over the last half. A leak of one fd per
#: fault passes it within a 10-minute run (five faults in its last half).
FDS_NOISE = 3


@dataclass
class Sample:
    t: float  # seconds since the start
    rss_mib: dict[str, float]
    fds: dict[str, int]
    pids: dict[str, int]
    db_mib: float
    db_in_use_mib: float
    #: method -> (p50, p99, calls) over the window before this sample (ms).
    latency: dict[str, tuple[float, float, int]]
    evals_in_flight: int
    deployments_in_flight: int


@dataclass
class FaultRecord:
    kind: str
    target: str
    start: float
    end: float
    write_gap: float = 0.0
    delivery_gap: float = 0.0


@dataclass
class SoakRecord:
    minutes: float
    seed: int
    samples: list[Sample] = field(default_factory=list)
    faults: list[FaultRecord] = field(default_factory=list)
    #: (t, method, seconds, code) of every workload call.
    calls: list[tuple[float, str, float, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def slope_per_min(points: Sequence[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, value) points, per minute (0 for < 3)."""
    if len(points) < 3:
        return 0.0
    ts = [p[0] for p in points]
    vs = [p[1] for p in points]
    mt, mv = statistics.fmean(ts), statistics.fmean(vs)
    den = sum((t - mt) ** 2 for t in ts)
    if den == 0:
        return 0.0
    return 60.0 * sum((t - mt) * (v - mv) for t, v in zip(ts, vs, strict=True)) / den


def _same_pid_tail(rec: SoakRecord, name: str, metric: str) -> list[tuple[float, float]]:
    """The longest same-pid stretch of ``name``'s ``metric`` in the last half."""
    half = rec.samples[len(rec.samples) // 2:]
    runs: list[list[tuple[float, float]]] = [[]]
    last_pid = None
    for s in half:
        if name not in s.pids:
            continue
        if s.pids[name] != last_pid and runs[-1]:
            runs.append([])
        last_pid = s.pids[name]
        value = s.rss_mib[name] if metric == "rss_mib" else float(s.fds[name])
        runs[-1].append((s.t, value))
    return max(runs, key=len)


def _half_minutes(rec: SoakRecord) -> float:
    half = rec.samples[len(rec.samples) // 2:]
    return (half[-1].t - half[0].t) / 60 if len(half) > 1 else 0.0


def grows(rec: SoakRecord, metric: str, slope: float) -> bool:
    if metric == "fds" and slope * _half_minutes(rec) <= FDS_NOISE:
        return False
    return slope > LIMITS[metric]


def slopes(rec: SoakRecord) -> dict[str, dict[str, float]]:
    """Per process: RSS and fds slopes over the last half (per minute)."""
    names = sorted({n for s in rec.samples for n in s.pids})
    return {n: {m: slope_per_min(_same_pid_tail(rec, n, m)) for m in ("rss_mib", "fds")}
            for n in names}


def db_slope(rec: SoakRecord) -> float:
    half = rec.samples[len(rec.samples) // 2:]
    return slope_per_min([(s.t, s.db_in_use_mib) for s in half])


def judge_flat(rec: SoakRecord) -> list[str]:
    problems = []
    for name, by in slopes(rec).items():
        for metric, value in by.items():
            if grows(rec, metric, value):
                problems.append(f"{name}: {metric} grows {value:.2f}/min over the last half "
                                f"(limit {LIMITS[metric]}"
                                + (f" and {FDS_NOISE} fds in all" if metric == "fds" else "")
                                + ")")
    db = db_slope(rec)
    if db > LIMITS["db_in_use_mib"]:
        problems.append(f"etcd DB in use grows {db:.2f} MiB/min over the last half "
                        f"(limit {LIMITS['db_in_use_mib']})")
    return problems


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def latency_table(rec: SoakRecord) -> list[str]:
    by: dict[str, list[float]] = {}
    failed: dict[str, int] = {}
    for _, method, seconds, code in rec.calls:
        by.setdefault(method, []).append(seconds * 1000)
        if code != "OK":
            failed[method] = failed.get(method, 0) + 1
    lines = ["| method | calls | failed | p50 (ms) | p99 (ms) | max (ms) |",
             "|---|---|---|---|---|---|"]
    for m in sorted(by):
        v = by[m]
        lines.append(f"| {m} | {len(v)} | {failed.get(m, 0)} | {_percentile(v, 0.5):.1f} "
                     f"| {_percentile(v, 0.99):.1f} | {max(v):.1f} |")
    return lines


def fault_table(rec: SoakRecord) -> list[str]:
    kinds: dict[str, list[FaultRecord]] = {}
    for f in rec.faults:
        kinds.setdefault(f.kind, []).append(f)
    lines = ["| fault | count | targets | longest write gap (s) | longest delivery gap (s) |",
             "|---|---|---|---|---|"]
    for k in sorted(kinds):
        fs = kinds[k]
        targets = ", ".join(sorted({f.target for f in fs}))
        lines.append(f"| {k} | {len(fs)} | {targets} | {max(f.write_gap for f in fs):.1f} "
                     f"| {max(f.delivery_gap for f in fs):.1f} |")
    return lines


def process_table(rec: SoakRecord) -> list[str]:
    first, last = rec.samples[0], rec.samples[-1]
    lines = ["| process | RSS first (MiB) | RSS last (MiB) | RSS slope, last half (MiB/min) "
             "| fds last | fds slope (/min) |", "|---|---|---|---|---|---|"]
    for name, by in slopes(rec).items():
        lines.append(f"| {name} | {first.rss_mib.get(name, math.nan):.1f} "
                     f"| {last.rss_mib.get(name, math.nan):.1f} | {by['rss_mib']:.2f} "
                     f"| {last.fds.get(name, 0)} | {by['fds']:.2f} |")
    return lines


def plot(rec: SoakRecord, out_dir: Path, stem: str) -> list[Path]:
    """PNG plots of memory, latency and DB size over time."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ts = [s.t / 60 for s in rec.samples]
    paths = []
    fig, ax = plt.subplots(figsize=(10, 5))
    for name in sorted({n for s in rec.samples for n in s.rss_mib}):
        ax.plot(ts, [s.rss_mib.get(name, math.nan) for s in rec.samples], label=name)
    ax.set(xlabel="minutes", ylabel="RSS (MiB)", title="memory per process")
    ax.legend(fontsize=6, ncol=3)
    paths.append(_save(fig, out_dir / f"{stem}-memory.png"))
    fig, ax = plt.subplots(figsize=(10, 5))
    methods = sorted({m for s in rec.samples for m in s.latency})
    for m in methods:
        ax.plot(ts, [s.latency[m][1] if m in s.latency else math.nan for s in rec.samples],
                label=m)
    ax.set(xlabel="minutes", ylabel="p99 latency (ms)", title="call latency (p99 per 10 s)",
           yscale="log")
    ax.legend(fontsize=6, ncol=3)
    for f in rec.faults:
        ax.axvspan(f.start / 60, f.end / 60, alpha=0.1, color="red")
    paths.append(_save(fig, out_dir / f"{stem}-latency.png"))
    fig, ax = plt.subplots(figsize=(10, 5))
    ax.plot(ts, [s.db_mib for s in rec.samples], label="DB size")
    ax.plot(ts, [s.db_in_use_mib for s in rec.samples], label="DB in use")
    ax.set(xlabel="minutes", ylabel="MiB", title="etcd DB size (largest member)")
    ax.legend()
    paths.append(_save(fig, out_dir / f"{stem}-db.png"))
    plt.close("all")
    return paths


def _save(fig: object, path: Path) -> Path:
    fig.savefig(path, dpi=80, bbox_inches="tight")  # type: ignore[attr-defined]
    return path


def write(rec: SoakRecord, out_dir: Path, stem: str = "soak") -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    pngs = plot(rec, out_dir, stem)
    last = rec.samples[-1]
    text = [f"# Soak: {rec.minutes:g} minutes under faults (bench/soak.py)", "",
            f"Seed {rec.seed}; `drover dev` with three etcd members, two replicas of every "
            "service, the worker and 200 simulated nodes; a fault every minute. Verdict: "
            + ("**pass**" if not rec.problems else f"**FAIL** ({len(rec.problems)} problems)"),
            "", *[f"- {n}" for n in rec.notes], "", "## Faults", "", *fault_table(rec), "",
            "## Processes (flat: slope over the last half under "
            f"{LIMITS['rss_mib']} MiB/min RSS, {LIMITS['fds']} fds/min adding up to more "
            f"than {FDS_NOISE})", "",
            *process_table(rec), "",
            f"etcd DB: {last.db_mib:.1f} MiB, in use {last.db_in_use_mib:.1f} MiB; in-use "
            f"slope over the last half {db_slope(rec):.2f} MiB/min (limit "
            f"{LIMITS['db_in_use_mib']}).", "", "## Calls", "", *latency_table(rec), "",
            "## Problems", "", *([f"- {p}" for p in rec.problems] or ["none"]), "",
            *[f"![{p.stem}]({p.name})" for p in pngs], ""]
    path = out_dir / f"{stem}.md"
    path.write_text("\n".join(text))
    return path
