"""The GC planner (virtual clock) and the pass driver over a fake state API."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from deployments_builders import T0
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    Gauge,
    Histogram,
    HistogramDataPoint,
    InMemoryMetricReader,
    NumberDataPoint,
    Sum,
)
from virtual_clock import VirtualClock

from drover.api.state.v1 import state_pb2
from drover.config import GcSettings, parse_duration
from drover.coord.fence import Fence
from drover.deployments.config import GcConfig
from drover.deployments.gc import GarbageCollector, GcPlanner
from drover.errors import NotLeader

FENCE = Fence("/drover/v1/election/deployments/x", 7)


def test_defaults_are_nomads() -> None:
    cfg = GcConfig()
    assert (cfg.eval_threshold, cfg.deployment_threshold, cfg.job_threshold,
            cfg.node_threshold) == (3600.0, 3600.0, 4 * 3600.0, 24 * 3600.0)
    assert GcConfig.from_settings(GcSettings(eval_threshold=5.0)).eval_threshold == 5.0


def test_cutoffs_follow_the_clock() -> None:
    clock = VirtualClock(T0)
    planner = GcPlanner(GcConfig())
    assert planner.cutoffs(clock()) == {
        "jobs": T0 - 4 * 3600, "evaluations": T0 - 3600, "deployments": T0 - 3600,
        "nodes": T0 - 24 * 3600}
    clock.advance(7200)
    assert planner.cutoffs(clock())["evaluations"] == T0 + 3600
    assert set(planner.cutoffs(clock(), force=True).values()) == {T0 + 7200}


def test_passes_are_due_one_interval_after_the_last() -> None:
    planner = GcPlanner(GcConfig(interval=300))
    assert planner.next_due(None, T0) == T0 + 300
    assert planner.next_due(T0 + 1000, T0 + 1001) == T0 + 1300


@pytest.mark.parametrize(("text", "seconds"), [
    ("90", 90.0), ("90s", 90.0), ("15m", 900.0), ("1h", 3600.0), ("1h30m", 5400.0),
    ("2d", 172800.0), ("250ms", 0.25), ("0.5h", 1800.0),
])
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "h", "1x", "1h30", "abc"])
def test_parse_duration_refuses_garbage(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)


class FakeState:
    """Answers each kind with ``pages_per_kind`` pages; ``calls`` is set on each."""

    def __init__(self, pages_per_kind: int = 3) -> None:
        self.requests: list[state_pb2.GarbageCollectRequest] = []
        self.pages = pages_per_kind
        self.called = asyncio.Event()

    async def garbage_collect(self, request: state_pb2.GarbageCollectRequest,
                              fence: Fence) -> state_pb2.GarbageCollectResponse:
        assert fence == FENCE
        copy = state_pb2.GarbageCollectRequest()
        copy.CopyFrom(request)
        self.requests.append(copy)
        self.called.set()
        step = request.after_index  # the fake's cursor: calls made for this kind
        done = step + 1 >= self.pages
        return state_pb2.GarbageCollectResponse(
            examined=10, evaluations=4, allocations=1, txns=1, largest_txn=6 + step,
            done=done, after_index=0 if done else step + 1, after_key=f"k{step}")


async def test_a_pass_follows_every_cursor_and_sums_the_answers() -> None:
    clock = VirtualClock(T0)
    state = FakeState(pages_per_kind=3)
    gc = GarbageCollector(state, GcConfig(max_examined=10), clock=clock,
                          monotonic=clock)
    result = await gc.run_pass(FENCE)
    kinds = [r.kind for r in state.requests]
    assert kinds == [state_pb2.GC_KIND_JOBS] * 3 + [state_pb2.GC_KIND_EVALUATIONS] * 3 + [
        state_pb2.GC_KIND_DEPLOYMENTS] * 3 + [state_pb2.GC_KIND_NODES] * 3
    assert [(r.after_index, r.after_key) for r in state.requests[:3]] == [
        (0, ""), (1, "k0"), (2, "k1")]
    assert all(r.max_examined == 10 for r in state.requests)
    evals = state.requests[3]
    assert evals.cutoff.ToNanoseconds() == int((T0 - 3600) * 1e9)
    assert (result.calls, result.examined, result.evaluations, result.allocations,
            result.txns, result.largest_txn) == (12, 120, 48, 12, 12, 8)
    assert gc.last == result


async def test_a_forced_pass_cuts_off_at_now() -> None:
    clock = VirtualClock(T0)
    state = FakeState(pages_per_kind=1)
    await GarbageCollector(state, GcConfig(), clock=clock).run_pass(FENCE, force=True)
    assert {r.cutoff.ToNanoseconds() for r in state.requests} == {int(T0 * 1e9)}


async def test_a_pass_stops_when_leadership_ends() -> None:
    state = FakeState(pages_per_kind=5)
    leading = iter([True, True, False])
    with pytest.raises(NotLeader):
        gc = GarbageCollector(state, GcConfig())
        await gc.run_pass(FENCE, still_leading=lambda: next(leading))
    assert len(state.requests) == 2


async def test_the_loop_runs_passes_every_interval_while_leading() -> None:
    state = FakeState(pages_per_kind=1)
    gc = GarbageCollector(state, GcConfig(interval=0.01))
    leading = True
    task = asyncio.create_task(gc.loop(FENCE, lambda: leading))
    async with asyncio.timeout(5):
        while len(state.requests) < 8:  # two passes of four kinds
            await state.called.wait()
            state.called.clear()
    leading = False
    async with asyncio.timeout(5):
        await task


async def test_each_pass_is_exported_as_metrics() -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    state = FakeState(pages_per_kind=2)
    gc = GarbageCollector(state, GcConfig(), metrics=provider.get_meter("test"))
    await gc.run_pass(FENCE)
    await gc.run_pass(FENCE, force=True)
    data = reader.get_metrics_data()
    assert data is not None
    # points by the kind of value they carry (a number, or a histogram's)
    numbers: dict[str, Sequence[NumberDataPoint]] = {}
    histograms: dict[str, Sequence[HistogramDataPoint]] = {}
    for m in (m for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics):
        if isinstance(m.data, (Sum, Gauge)):
            numbers[m.name] = m.data.data_points
        elif isinstance(m.data, Histogram):
            histograms[m.name] = m.data.data_points
    passes = {(p.attributes or {})["forced"]: p.value
              for p in numbers["drover_gc_passes_total"]}
    assert passes == {"false": 1, "true": 1}
    objects = {(p.attributes or {})["kind"]: p.value for p in numbers["drover_gc_objects_total"]}
    assert objects == {"evaluations": 2 * 8 * 4, "allocations": 2 * 8}
    assert [p.value for p in numbers["drover_gc_txns_total"]] == [16]
    durations = histograms["drover_gc_pass_duration_seconds"]
    assert sum(p.count for p in durations) == 2
