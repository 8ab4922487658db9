"""drover on a test network (drover.dev.netns), the chaos load, and what a
network fault scenario measures.

The cluster, :func:`measure` and :func:`until` live in
:mod:`drover.dev.netcluster` (shared with ``drover drill``); this module adds
the chaos load, the judges and the results table.

:class:`NetCluster` starts real processes, each in its own namespace on the
test bridge: etcd members (``etcd-<i>``) and `drover serve` replicas (one
host per replica, named after it), all listening on their host's address.
The test process reaches them through the ``client`` host (loopback relays,
:meth:`drover.dev.netns.Net.forward`): its in-process load (the chaos
test's workers, simulated nodes, driver, deleter and observer, recorded by
chaos_load.Recorder) is that host, and faults on it apply to the load.

:func:`measure` turns a record into the numbers the scenarios report (and
bench/results/netfault.md tabulates): the longest gap between successful
writes and between deliveries around the fault, and the failed calls by
method, code and ErrorInfo reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from chaos_load import Deleter, Driver, Observer, Record, Recorder, list_all
from linearizability.recorded_load import Figures, RecordedClients
from test_chaos import overlaps, too_long

from drover.api.broker.v1 import broker_pb2, broker_pb2_grpc
from drover.api.proxy.v1 import proxy_pb2, proxy_pb2_grpc
from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.dev.netcluster import (  # noqa: F401  (re-exported to the scenarios)
    HOLD,
    NACK,
    PORT,
    TTL,
    Measured,
    NetCluster,
    Svc,
    measure,
    until,
)
from drover.sim.nodes import SimConfig, SimNodes
from drover.tasks import cancel_and_wait
from drover.worker.loop import Worker, WorkerConfig

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results" / "netfault.md"
LIN_RESULTS = RESULTS.with_name("netfault-linearizability.md")


@dataclass
class Load:
    """The chaos load through the proxy, from the client host."""

    cluster: NetCluster
    proxy: Svc
    rng: random.Random
    record: Record = field(default_factory=Record)
    seed: int = 0
    #: The recorded clients' histories, checked when :meth:`running` ends.
    lin_problems: list[str] = field(default_factory=list)
    lin_figures: list[Figures] = field(default_factory=list)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Load]:
        """The load until the block ends; then its recorded clients'
        histories are checked (:attr:`lin_problems`, :attr:`lin_figures`)."""
        self.ch = self.cluster.channel(self.proxy, Recorder(self.record))
        self.state = state_pb2_grpc.StateServiceStub(self.ch)
        self.broker = broker_pb2_grpc.EvalBrokerServiceStub(self.ch)
        self.driver = Driver(self.ch, self.record, self.rng)
        self.deleter = Deleter(self.ch, self.record, self.rng)
        lin_ch = self.cluster.channel(self.proxy)
        try:
            await until(self.broker_up, 90, "a broker leader through the proxy")
            async with self._recorded(lin_ch):
                yield self
        finally:
            await self.ch.close()
            await lin_ch.close()

    @contextlib.asynccontextmanager
    async def _recorded(self, lin_ch: grpc.aio.Channel) -> AsyncIterator[None]:
        """Recorded clients (jobs, evaluations) on their own channel, around the chaos load."""
        lin = RecordedClients(random.Random(self.seed))
        # They stop with the driver: the scenario's final reads need the
        # evaluations to stand still.
        lin.start(lin_ch, running=lambda: self.driver.running)
        try:
            async with self._chaos():
                yield
        finally:
            await lin.stop()
        self.lin_problems, self.lin_figures = lin.judge()

    @contextlib.asynccontextmanager
    async def _chaos(self) -> AsyncIterator[None]:
        sim = SimNodes(self.ch, SimConfig(count=3, heartbeat=1.0))
        workers = [Worker(self.ch, WorkerConfig(batch=4, dequeue_timeout=2.0,
                                                seed=self.seed + i))
                   for i in range(2)]
        tasks = [asyncio.create_task(c) for c in (
            sim.run(), *(w.run() for w in workers), Observer(self.ch, self.record).run(),
            self.driver.run(), self.deleter.run())]
        try:
            yield
        finally:
            await cancel_and_wait(tasks, within=10.0, what="netfault load")

    async def broker_up(self) -> bool:
        r = await self.broker.GetBrokerStats(broker_pb2.GetBrokerStatsRequest(), timeout=2)
        return bool(r.stats.enabled)

    async def servers(self, service: str) -> list[proxy_pb2.Server]:
        resp = await proxy_pb2_grpc.ClientProxyServiceStub(self.ch).ListServers(
            proxy_pb2.ListServersRequest(service=service), timeout=2)
        return [s for lst in resp.lists for s in lst.servers]

    async def leader(self, service: str) -> str:
        """The replica that leads ``service`` now, as the proxy lists it."""
        async def find() -> str:
            return next((s.replica for s in await self.servers(service) if s.leader), "")
        return str(await until(find, 30, f"a {service} leader"))

    async def final(self) -> Final:
        """Every evaluation listed now, and what the load knew as the listing
        began (see :class:`Final`)."""
        known, deleted = frozenset(self.record.evals), frozenset(self.record.deleted)
        evals = await list_all(self.state, "ListEvaluations", state_pb2.ListEvaluationsRequest(
            page_size=1000), "evaluations")
        return Final(evals, known, deleted)


@dataclass(frozen=True)
class Final:
    """The evaluations listed at a scenario's end, with what the load knew
    just before the listing began.

    The load is still running while it lists (its workers ack and follow
    up, the nodes heartbeat, the observer lists), so ids learnt *after* the
    listing began may name evaluations created after it: judging them
    against the listing reported evaluations created late as vanished
    (netfault run 3 of session 14: 7 "vanished", every one of them in etcd
    and in both state caches). Likewise an evaluation deleted after the
    listing began may be in it without being back."""

    evals: list[Any]
    known: frozenset[str]
    deleted: frozenset[str]

    @property
    def ids(self) -> set[str]:
        return {e.id for e in self.evals}


def judge(r: Record, cached: dict[str, set[str]], in_etcd: set[str], final: Final,
          excused: list[tuple[float, float]] | None = None) -> list[str]:
    """The chaos test's judges on a load's record (nothing lost, no deleted
    evaluation back, no delivery across terms, every call bounded: time
    within an ``excused`` interval does not count), and every state
    replica's evaluations (``cached``) equal to etcd's (``in_etcd``);
    ``final`` is what exists at the end. A delete known by the end excuses
    a missing evaluation, whenever it was recorded: it may have been in
    flight while the final listing ran."""
    ids = final.ids
    print(f"evaluations {len(ids)} (known to the load {len(final.known)} as the final "
          f"listing began, {len(r.evals)} by the end; in etcd {len(in_etcd)}), deleted "
          f"{len(r.deleted)}, deliveries {len(r.deliveries)} under "
          f"terms {sorted({term(d.token) for d in r.deliveries})}, jobs registered "
          f"{r.registered}, caches {', '.join(f'{k}: {len(v)}' for k, v in cached.items())}")
    problems = [f"evaluation {e} vanished"
                for e in sorted(final.known - r.deleted - r.maybe_deleted - ids)]
    problems += [f"deleted evaluation {e} is back" for e in sorted(final.deleted & ids)]
    problems += overlaps(r.deliveries, r.outcomes, NACK)
    problems += too_long(r.calls, excused or [])
    for name, ids in cached.items():
        if ids != in_etcd:
            problems.append(f"{name}'s cache differs from etcd: {len(ids - in_etcd)} extra, "
                            f"{len(in_etcd - ids)} missing")
    return problems


def served_after(probes: list[tuple[float, str]], who: str, fault: float, bound: float,
                 served: Callable[[str], bool] = lambda code: code == "OK") -> list[str]:
    """Probes (start, code) of ``who`` it answered as a leader (``served``)
    though they started after ``bound``: a deposed leader serving."""
    return [f"{who} served a call {s - fault:.1f}s after the fault ({code}), "
            f"{s - bound:.1f}s past the bound" for s, code in probes if served(code) and s > bound]


def term(token: str) -> int:
    head = token.partition(".")[0]
    return int(head) if head.isdigit() else 0


HEADER = ("| scenario | seed | fault (s) | writes stopped (s) | deliveries stopped (s) "
          "| calls | failed (method code reason x count) |\n|---|---|---|---|---|---|---|\n")


def write_result(m: Measured) -> None:
    """Put ``m``'s row into bench/results/netfault.md (one row per scenario;
    a ``## Notes`` section after the table is kept)."""
    rows: dict[str, str] = {}
    notes = ""
    if RESULTS.exists():
        text = RESULTS.read_text()
        # Hand-written notes after the table are kept as they are.
        text, marker, tail = text.partition("\n## Notes")
        notes = marker + tail
        for line in text.splitlines():
            cells = [c.strip() for c in line.strip("|").split("|")]
            if line.startswith("| ") and cells[0] not in ("scenario", "") and \
                    not re.match(r"^-+$", cells[0]):
                rows[cells[0]] = line
    failed = "; ".join(f"{k} x{n}" for k, n in sorted(m.failed.items())) or "none"
    rows[m.scenario] = (f"| {m.scenario} | {m.seed} | {m.fault_seconds:.1f} | "
                        f"{m.write_gap:.1f} | {m.delivery_gap:.1f} | {m.calls} | {failed} |")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        "# Network fault scenarios (tests/system/test_netfault.py)\n\n"
        "Written by the tests (`make test-netfault`): per scenario, how long the fault "
        "lasted, the longest gap between successful writes (RegisterJob through the "
        "proxy) and between deliveries (Dequeue handing out an evaluation, through the "
        "proxy) from the fault's start to the end of the settle time after healing, "
        "and the calls of the whole run that failed, by method, status code and "
        "ErrorInfo reason. No delay is modelled (no tc/netem on these machines).\n\n"
        + HEADER + "\n".join(rows[k] for k in sorted(rows)) + "\n" + notes)


LIN_HEADER = ("| scenario | history | operations | unknown | keys | most open on one key "
              "| search steps | check (s) | linearizable |\n"
              "|---|---|---|---|---|---|---|---|---|\n")


def write_lin(scenario: str, figures: list[Figures]) -> None:
    """Put the scenario's history checks into
    bench/results/netfault-linearizability.md (one row per scenario and history)."""
    rows: dict[tuple[str, str], str] = {}
    if LIN_RESULTS.exists():
        for line in LIN_RESULTS.read_text().splitlines():
            cells = [c.strip() for c in line.strip("|").split("|")]
            if line.startswith("| ") and len(cells) > 1 and cells[0] not in ("scenario", "") \
                    and not re.match(r"^-+$", cells[0]):
                rows[(cells[0], cells[1])] = line
    for f in figures:
        rows[(scenario, f.what)] = (
            f"| {scenario} | {f.what} | {f.operations} | {f.unknown} | {f.keys} | {f.max_open} "
            f"| {f.steps} | {f.seconds:.2f} | {'yes' if f.ok else 'NO'} |")
    LIN_RESULTS.write_text(
        "# Network fault scenarios: the recorded histories, checked\n\n"
        "Written by the tests (`make test-netfault`): per scenario, the history its "
        "recorded clients made through the proxy while the fault came and went (jobs as "
        "compare-and-set registers; evaluations as create, status transitions by Ack, and "
        "reads: tests/linearizability/), and what checking it cost. The cost is bounded by "
        "the most operations open at once on one key (two clients per job, a creator, an "
        "acker and one reader per evaluation; a client leaves a key after an unknown "
        "outcome), not by the length of the run.\n\n"
        + LIN_HEADER + "\n".join(rows[k] for k in sorted(rows)) + "\n")
