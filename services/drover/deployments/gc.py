"""Garbage collection, run by the deployment watcher's leader.

Leader only: the loop runs inside a leadership term and every call carries
the term's fence, so a deposed leader deletes nothing. A *pass* walks, in
Nomad's order of core jobs, jobs, evaluations (with their allocations),
deployments and nodes; for each kind it asks the state service for one
bounded step at a time (:mod:`drover.state.gc`: at most ``max_examined``
objects judged, deletes in txns of at most 120 objects) and follows the
cursor until the walk is done, sleeping ``pace`` between steps so the
store serves others meanwhile. At most one pass runs at a time (a forced
pass waits for a periodic one to end).

:class:`GcPlanner` is the pure part: when the next pass is due and the
cutoff time of each kind, from a clock passed in and the thresholds
(Nomad's defaults: 1 h for evaluations and deployments, 4 h for jobs, 24 h
for nodes). A forced pass (``drover system gc``) uses cutoff = now, as
``nomad system gc`` does.

Every pass is recorded as metrics: ``drover_gc_passes_total``,
``drover_gc_objects_total{kind}``, ``drover_gc_txns_total`` and the
histogram ``drover_gc_pass_duration_seconds``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Protocol

from google.protobuf.timestamp_pb2 import Timestamp
from opentelemetry.metrics import Meter

from drover.api.state.v1 import state_pb2
from drover.coord.fence import Fence
from drover.deployments.config import GcConfig
from drover.errors import NotLeader
from drover.telemetry import meter

log = logging.getLogger(__name__)

#: Pass order: jobs first (a dead job takes its evaluations with it), then
#: what is left of evaluations, then deployments and nodes.
KINDS = (
    ("jobs", state_pb2.GC_KIND_JOBS),
    ("evaluations", state_pb2.GC_KIND_EVALUATIONS),
    ("deployments", state_pb2.GC_KIND_DEPLOYMENTS),
    ("nodes", state_pb2.GC_KIND_NODES),
)


@dataclass(frozen=True)
class GcPlanner:
    """Pure: when passes are due and how old an object must be."""

    config: GcConfig

    def cutoffs(self, now: float, force: bool = False) -> dict[str, float]:
        return {kind: now if force else now - self.config.threshold(kind) for kind, _ in KINDS}

    def next_due(self, last_pass_end: float | None, now: float) -> float:
        """The first pass is due one interval after leadership starts."""
        return (now if last_pass_end is None else last_pass_end) + self.config.interval


@dataclass(frozen=True)
class GcPassResult:
    evaluations: int = 0
    allocations: int = 0
    deployments: int = 0
    jobs: int = 0
    job_versions: int = 0
    nodes: int = 0
    examined: int = 0
    txns: int = 0
    largest_txn: int = 0
    duration: float = 0.0
    calls: int = 0


class GcStateApi(Protocol):
    async def garbage_collect(
        self, request: state_pb2.GarbageCollectRequest, fence: Fence
    ) -> state_pb2.GarbageCollectResponse: ...


_COUNTED = ("evaluations", "allocations", "deployments", "jobs", "job_versions", "nodes")


class _Metrics:
    def __init__(self, m: Meter) -> None:
        self.passes = m.create_counter("drover_gc_passes_total", description="GC passes run")
        self.objects = m.create_counter("drover_gc_objects_total",
                                        description="objects removed by GC, by kind")
        self.txns = m.create_counter("drover_gc_txns_total", description="GC delete txns")
        self.duration = m.create_histogram("drover_gc_pass_duration_seconds", unit="s",
                                           description="duration of one GC pass")

    def record(self, result: GcPassResult, forced: bool) -> None:
        self.passes.add(1, {"forced": str(forced).lower()})
        for name in _COUNTED:
            n = getattr(result, name)
            if n:
                self.objects.add(n, {"kind": name})
        self.txns.add(result.txns)
        self.duration.record(result.duration, {"forced": str(forced).lower()})


class GarbageCollector:
    """The async shell: runs passes for the current leader (see module doc)."""

    def __init__(self, state: GcStateApi, config: GcConfig, *,
                 clock: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic,
                 metrics: Meter | None = None) -> None:
        self.state = state
        self.planner = GcPlanner(config)
        self._clock, self._monotonic = clock, monotonic
        self._lock = asyncio.Lock()
        self._metrics = _Metrics(metrics or meter("drover.deployments.gc"))
        self.last: GcPassResult | None = None

    async def run_pass(self, fence: Fence, *, force: bool = False,
                       still_leading: Callable[[], bool] = lambda: True,
                       service: str = "deployments") -> GcPassResult:
        async with self._lock:
            started = self._monotonic()
            cfg = self.planner.config
            totals = dict.fromkeys((f.name for f in fields(GcPassResult)), 0)
            largest = 0
            for name, kind in KINDS:
                cutoff = Timestamp()
                cutoff.FromNanoseconds(int(self.planner.cutoffs(self._clock(), force)[name] * 1e9))
                req = state_pb2.GarbageCollectRequest(kind=kind, cutoff=cutoff,
                                                      max_examined=cfg.max_examined)
                while True:
                    if not still_leading():
                        raise NotLeader(service, None)
                    resp = await self.state.garbage_collect(req, fence)
                    totals["calls"] += 1
                    for key in (*_COUNTED, "examined", "txns"):
                        totals[key] += getattr(resp, key)
                    largest = max(largest, resp.largest_txn)
                    if resp.done:
                        break
                    req.after_index, req.after_key = resp.after_index, resp.after_key
                    await asyncio.sleep(cfg.pace)
            totals["largest_txn"] = largest
            result = GcPassResult(**{k: v for k, v in totals.items() if k != "duration"},
                                  duration=self._monotonic() - started)
            self.last = result
            self._metrics.record(result, force)
            if any(getattr(result, n) for n in _COUNTED):
                log.info("gc pass: %s", result)
            return result

    async def loop(self, fence: Fence, still_leading: Callable[[], bool]) -> None:
        """Periodic passes while leading; a failed pass is logged and retried
        on the next interval (GC is never urgent)."""
        due = self.planner.next_due(None, self._clock())
        while still_leading():
            await asyncio.sleep(max(0.0, due - self._clock()))
            if not still_leading():
                return
            try:
                await self.run_pass(fence, still_leading=still_leading)
            except asyncio.CancelledError:
                raise
            except Exception as err:
                log.warning("gc pass failed: %r", err)
            due = self.planner.next_due(self._clock(), self._clock())
