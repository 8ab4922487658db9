"""The soak's record, its judges and its report (bench/soak.py runs it; `make bench` skips both).

Samples every 10 s: RSS and open fds per process (by name; a restarted
process keeps its name and gets a new pid), etcd's DB size (total and in
use, the largest of the members), call latency by method over the last
window, evaluations and deployments in flight. The judges at the end:

* flat: the Theil-Sen slope over the last half of the run, per
  process over its longest same-pid stretch there (a restart is a new
  process, judged past its warm-up: :data:`WARM_UP_S`), is growth when it
  is above :data:`LIMITS` (RSS MiB/min, fds/min, DB in use MiB/min, etcd's
  keys and watchers per minute) and adds up to more than :data:`NOISE`
  over the stretch;
  etcd's RSS is recorded and plotted, not judged (:data:`UNJUDGED_RSS`,
  the reasons there);
* the workload's judges (nothing lost, deployments terminal, history
  linearizable) are bench/soak.py's, passed in as problems.

The report is a markdown file with the tables and PNG plots of memory,
latency and DB size over time (matplotlib).
"""

from __future__ import annotations

import itertools
import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

#: Slopes over the last half that count as growth (per minute).
#:
#: Why the last half, and why these limits hold for a 10-minute run: every
#: bounded structure in drover's processes fills in the first minutes
#: (measured with tracemalloc on a state replica under the soak's workload,
#: 28 Nov: the Subscribe hub's ring, then bounded by count alone, was full
#: before 6 minutes at 50 nodes but took 15-35 at the hour's rates; since
#: 29 Nov it holds ``state_subscribe_replay_window``, 60 s, so it is full
#: after one minute at any rate); the cache's live set levels off
#: once the first GC thresholds (2 minutes in the soak) have passed; the
#: allocator's arenas reach their high-water mark and stay there, a plateau,
#: not a slope). What still climbs over the last half is growth. Before the
#: live batch jobs' evaluations were collected (Nomad's
#: ``olderVersionTerminalAllocs``, drover.state.core.gc_rules), the state
#: replicas' slopes were 1.3-2.4 MiB/min and etcd's live keys grew by ~450 a
#: minute: the live set itself, not a cache, and this judge caught it.
#:
#: ``etcd_keys``: etcd's live keys (the largest member's
#: ``etcd_debugging_mvcc_keys_total``): the cluster's live set; a workload
#: in a steady state keeps it level give or take what is in flight, so 100
#: a minute (6 000 an hour) is growth. ``etcd_watchers``: etcd's watchers
#: (``etcd_debugging_mvcc_watcher_total``): a watch drover opens and never
#: cancels (a resume that forgets the old one) grows it.
LIMITS = {"rss_mib": 1.0, "fds": 0.5, "db_in_use_mib": 1.0, "etcd_keys": 100.0,
          "etcd_watchers": 0.5}
#: Processes whose RSS is recorded and plotted but not judged: etcd's. Its
#: memory is etcd's by design and bounded by its configuration, not by
#: drover's conduct: the raft log it keeps in memory (``--snapshot-count``
#: 10 000 entries since the last snapshot plus 5 000 kept for followers to
#: catch up: filled only after minutes of the soak's writes, then a
#: sawtooth as snapshots truncate it), the MVCC index
#: of every key revision not yet compacted (``--auto-compaction-retention``),
#: the pages of its mmap'd bbolt DB that were touched (up to the DB file's
#: size, which only a defrag shrinks) and Go's collector, which lets the heap
#: reach twice the live data before collecting and returns freed pages to
#: the OS lazily. etcd's own guidance sizes memory from these and watches
#: the DB size against its quota (``etcd_mvcc_db_total_size_in_bytes``) for
#: growth; so does this judge: what drover makes etcd hold is its DB in use,
#: its live keys and its watchers, each judged flat above (the first soak's
#: etcd slopes, 7.7-9.0 MiB/min, were mostly the raft log at the default
#: snapshot count of 100 000; at 10 000 they were 0.9-2.7 MiB/min over a
#: last half that still held its fill and sawtooth, while the DB, keys and
#: watchers said whether anything grew).
UNJUDGED_RSS = ("etcd-",)
#: A slope is growth only if it also adds up to more than this over the
#: stretch judged (the last half, or a restarted process's part of it):
#: what a run's faults move a level by, once, without a trend.
#:
#: * fds and etcd's watchers move by a few as connections come and go (a
#:   client reconnecting after a fault, a watch resuming). A leak of one fd
#:   per fault passes it within a 10-minute run (five faults in its last half).
#: * A Python process's RSS steps up while a fault holds work in its buffers
#:   (an etcd member frozen: the state replicas' writes and watches queue)
#:   and keeps the high-water mark: 4.6 MiB over the last 2 minutes of a
#:   10-minute run (state-0, two etcd freezes; 29 Nov), flat again in the
#:   hour. The regressions this judge caught grew 1.3-2.4 MiB/min (state,
#:   before the batch-evaluation GC) and ~7 MiB/min (etcd's raft log): at
#:   least 6.5 MiB over a 10-minute run's last half.
#: * etcd's live keys drift with what is in flight between GC passes (every
#:   30 s, 2-minute thresholds): +1 050 and -2 100 over the last halves of
#:   two 10-minute runs around ~7 000 keys (29 Nov); the live set that grew
#:   (before the batch-evaluation GC) grew 450 a minute, 2 250 in 5 minutes.
NOISE = {"fds": 3.0, "etcd_watchers": 3.0, "rss_mib": 6.0, "etcd_keys": 1500.0}


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
    #: etcd's live keys and watchers (the largest member's).
    etcd_keys: int = 0
    etcd_watchers: int = 0


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
    """The Theil-Sen slope of (seconds, value) points, per minute (0 for
    < 3): the median of the slopes between every two points. A trend (a
    leak) is its slope; a step (a fault's high-water mark, a batch of
    connections reopened) near either end of the stretch moves it little,
    where it tilts a least-squares line over the whole stretch."""
    if len(points) < 3:
        return 0.0
    pairs = [(b[1] - a[1]) / (b[0] - a[0])
             for a, b in itertools.combinations(points, 2) if b[0] != a[0]]
    return 60.0 * statistics.median(pairs) if pairs else 0.0


#: A process restarted during the run (a kill -9) is judged from as long
#: after its start as the run's first processes were (the first half), at
#: most this long, and only when that leaves :data:`MIN_JUDGED_S` of it;
#: else its slope is not judged and the report says so. A fresh process
#: fills its bounded structures again (a state replica's cache is listed
#: at once, its replay ring takes ``state_subscribe_replay_window``, 60 s;
#: the allocator's arenas reach their high-water mark): judged from its
#: first sample, a state replica killed at minute 3 of a 10-minute run
#: "grew" 2.9 MiB/min over a stretch that was all warm-up, then held at
#: its peer's level.
WARM_UP_S = 300.0
MIN_JUDGED_S = 120.0


def _warm_up(rec: SoakRecord) -> float:
    half = rec.samples[len(rec.samples) // 2:]
    return min(WARM_UP_S, half[0].t - rec.samples[0].t) if half else 0.0


def _same_pid_tail(rec: SoakRecord, name: str, metric: str) -> list[tuple[float, float]]:
    """The longest same-pid stretch of ``name``'s ``metric`` in the last
    half, a restarted process's past its warm-up (:data:`WARM_UP_S`); empty
    when that leaves less than :data:`MIN_JUDGED_S` to judge."""
    started: dict[int, float] = {}
    for s in rec.samples:
        if name in s.pids:
            started.setdefault(s.pids[name], s.t)
    first, warm_up = rec.samples[0].pids.get(name), _warm_up(rec)
    runs: list[tuple[int | None, list[tuple[float, float]]]] = [(None, [])]
    for s in rec.samples[len(rec.samples) // 2:]:
        pid = s.pids.get(name)
        if pid is None or (pid != first and s.t < started[pid] + warm_up):
            continue
        if pid != runs[-1][0]:
            runs.append((pid, []))
        value = s.rss_mib[name] if metric == "rss_mib" else float(s.fds[name])
        runs[-1][1].append((s.t, value))
    pid, best = max(runs, key=lambda r: len(r[1]))
    if pid != first and (not best or best[-1][0] - best[0][0] < MIN_JUDGED_S):
        return []
    return best


def _half_minutes(rec: SoakRecord) -> float:
    half = rec.samples[len(rec.samples) // 2:]
    return (half[-1].t - half[0].t) / 60 if len(half) > 1 else 0.0


def grows(metric: str, slope: float, minutes: float) -> bool:
    """Whether ``slope`` (per minute, over a stretch of ``minutes``) is
    growth: above its limit and adding up to more than its noise."""
    if math.isnan(slope):  # not judged (a restart too late in the run)
        return False
    return slope > LIMITS[metric] and slope * minutes > NOISE.get(metric, 0.0)


def _limit(metric: str) -> str:
    noise = f" and {NOISE[metric]:g} in all" if metric in NOISE else ""
    return f"(limit {LIMITS[metric]:g}/min{noise})"


def judged(name: str, metric: str) -> bool:
    return not (metric == "rss_mib" and name.startswith(UNJUDGED_RSS))


def slopes(rec: SoakRecord) -> dict[str, dict[str, float]]:
    """Per process: RSS and fds slopes over the last half (per minute); NaN
    when no stretch of it could be judged (see :data:`WARM_UP_S`)."""
    return {n: {m: s for m, (s, _) in by.items()} for n, by in _stretches(rec).items()}


def _stretches(rec: SoakRecord) -> dict[str, dict[str, tuple[float, float]]]:
    """Per process and metric: (slope per minute, minutes judged)."""
    names = sorted({n for s in rec.samples for n in s.pids})
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for n in names:
        out[n] = {}
        for m in ("rss_mib", "fds"):
            tail = _same_pid_tail(rec, n, m)
            out[n][m] = ((slope_per_min(tail), (tail[-1][0] - tail[0][0]) / 60) if tail
                         else (math.nan, 0.0))
    return out


def db_slope(rec: SoakRecord) -> float:
    half = rec.samples[len(rec.samples) // 2:]
    return slope_per_min([(s.t, s.db_in_use_mib) for s in half])


def etcd_slopes(rec: SoakRecord) -> dict[str, float]:
    """etcd's live keys and watchers: slopes over the last half (per minute)."""
    half = rec.samples[len(rec.samples) // 2:]
    return {"etcd_keys": slope_per_min([(s.t, s.etcd_keys) for s in half]),
            "etcd_watchers": slope_per_min([(s.t, s.etcd_watchers) for s in half])}


def judge_flat(rec: SoakRecord) -> list[str]:
    problems = []
    for name, by in _stretches(rec).items():
        for metric, (value, minutes) in by.items():
            if judged(name, metric) and grows(metric, value, minutes):
                problems.append(f"{name}: {metric} grows {value:.2f}/min over "
                                f"{minutes:.1f} minutes of the last half {_limit(metric)}")
    db = db_slope(rec)
    if grows("db_in_use_mib", db, _half_minutes(rec)):
        problems.append(f"etcd DB in use grows {db:.2f} MiB/min over the last half "
                        f"{_limit('db_in_use_mib')}")
    for metric, value in etcd_slopes(rec).items():
        if grows(metric, value, _half_minutes(rec)):
            problems.append(f"{metric} grows {value:.2f}/min over the last half "
                            f"{_limit(metric)}")
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
        if math.isnan(by["rss_mib"]):
            rss = "- (restarted too late to judge past its warm-up)"
        else:
            rss = f"{by['rss_mib']:.2f}" + ("" if judged(name, "rss_mib") else " (not judged)")
        lines.append(f"| {name} | {first.rss_mib.get(name, math.nan):.1f} "
                     f"| {last.rss_mib.get(name, math.nan):.1f} | {rss} "
                     f"| {last.fds.get(name, 0)} | {_num(by['fds'])} |")
    return lines


def _num(v: float) -> str:
    return "-" if math.isnan(v) else f"{v:.2f}"


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
    ax.set(xlabel="minutes", ylabel="MiB", title="etcd DB size and live keys (largest member)")
    ax.legend(loc="upper left")
    keys = ax.twinx()
    keys.plot(ts, [s.etcd_keys for s in rec.samples], color="gray", label="live keys")
    keys.set(ylabel="keys")
    keys.legend(loc="upper right")
    paths.append(_save(fig, out_dir / f"{stem}-db.png"))
    plt.close("all")
    return paths


def _save(fig: object, path: Path) -> Path:
    fig.savefig(path, dpi=80, bbox_inches="tight")  # type: ignore[attr-defined]
    return path


def etcd_lines(rec: SoakRecord) -> list[str]:
    last, slopes_ = rec.samples[-1], etcd_slopes(rec)
    return [f"etcd DB: {last.db_mib:.1f} MiB, in use {last.db_in_use_mib:.1f} MiB; in-use "
            f"slope over the last half {db_slope(rec):.2f} MiB/min "
            f"{_limit('db_in_use_mib')}. Live keys {last.etcd_keys}, slope "
            f"{slopes_['etcd_keys']:.1f}/min {_limit('etcd_keys')}; watchers "
            f"{last.etcd_watchers}, slope {slopes_['etcd_watchers']:.2f}/min "
            f"{_limit('etcd_watchers')}. etcd's RSS is recorded, not judged "
            "(bench/_soak_report.py, UNJUDGED_RSS, says why)."]


def write(rec: SoakRecord, out_dir: Path, stem: str = "soak") -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    pngs = plot(rec, out_dir, stem)
    text = [f"# Soak: {rec.minutes:g} minutes under faults (bench/soak.py)", "",
            f"Seed {rec.seed}; `drover dev` with three etcd members, two replicas of every "
            "service, the worker and 200 simulated nodes; a fault every minute. Verdict: "
            + ("**pass**" if not rec.problems else f"**FAIL** ({len(rec.problems)} problems)"),
            "", *[f"- {n}" for n in rec.notes], "", "## Faults", "", *fault_table(rec), "",
            "## Processes (flat: slope over the last half under "
            f"{LIMITS['rss_mib']} MiB/min RSS adding up to more than {NOISE['rss_mib']:g} "
            f"MiB, {LIMITS['fds']} fds/min adding up to more than {NOISE['fds']:g})", "",
            *process_table(rec), "",
            *etcd_lines(rec), "", "## Calls", "", *latency_table(rec), "",
            "## Problems", "", *([f"- {p}" for p in rec.problems] or ["none"]), "",
            *[f"![{p.stem}]({p.name})" for p in pngs], ""]
    path = out_dir / f"{stem}.md"
    path.write_text("\n".join(text))
    write_json(rec, out_dir / f"{stem}.json")
    return path


def write_json(rec: SoakRecord, path: Path) -> None:
    """The samples and faults the report was judged on (every call's record
    is left out: an hour holds ~200 000), so a judge can be asked again of
    the same run."""
    data = {"minutes": rec.minutes, "seed": rec.seed, "notes": rec.notes,
            "problems": rec.problems, "faults": [asdict(f) for f in rec.faults],
            "samples": [asdict(s) for s in rec.samples]}
    path.write_text(json.dumps(data, separators=(",", ":")))
