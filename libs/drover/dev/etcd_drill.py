"""etcd fault drills: drover under load while one etcd member misbehaves.

A three-member etcd cluster on loopback, one state service and two broker
replicas (``drover serve`` processes, given all three endpoints), a writer
creating one evaluation every ``1/write_rate`` s through the state service
and ``workers`` scheduler workers doing Dequeue + Ack against the broker
leader (following its ``drover-leader`` hint). Every process is pinned to
member 0 (``DROVER_ETCD_ORDER=given``, member 0 listed first), so "the
member drover is connected to" is known; etcd leadership is moved to member
0 or away from it before each fault, as the fault needs.

For each fault it records: the longest gap between successful writes and
between Dequeues that handed out an evaluation (over the fault window), the
writes that failed (and how many said OUTCOME_UNKNOWN), broker leadership
changes, and, once the load has drained, evaluations written but never
acked (lost) and evaluations acked twice (duplicates).

Used by ``bench/etcd_faults.py`` (the table) and the fault tests.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import grpc

from drover.api.broker.v1 import broker_pb2, broker_pb2_grpc
from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1.evaluation_pb2 import Evaluation, EvaluationStatus
from drover.config import EtcdSettings
from drover.coord import EtcdClient, EtcdKV, Keyspace, connect, observe_changes
from drover.dev.etcd import EtcdCluster
from drover.dev.ports import free_port, wait_for_port
from drover.errors import OutcomeUnknown
from drover.rpc.remote import error_info, leader_hint
from drover.tasks import cancel_and_wait

__all__ = ["FAULTS", "Drill", "DrillConfig", "FaultResult"]

PENDING = EvaluationStatus.EVALUATION_STATUS_PENDING
PREFIX = "/drill/drover"


@dataclass(frozen=True)
class DrillConfig:
    #: None: the services' default session TTL.
    session_ttl: int | None = None
    write_rate: float = 20.0
    workers: int = 4
    #: How long a SIGSTOPped member stays frozen, a killed one stays down.
    fault_seconds: float = 10.0
    #: Load observed before the fault and after it ends.
    settle: float = 4.0
    #: Longest wait for every written evaluation to be acked after a fault.
    drain_timeout: float = 30.0
    #: Ending the drill waits this long for its cancelled load (``drover.tasks``).
    stop_timeout: float = 5.0


@dataclass(frozen=True)
class FaultResult:
    fault: str
    write_gap: float
    dequeue_gap: float
    writes: int
    writes_failed: int
    outcome_unknown: int
    leader_changes: int
    lost: int
    duplicates: int
    #: Not acked by the end, but held by the broker (an Ack that failed during
    #: the fault: redelivered after its nack timeout) or settled in state
    #: (an Ack whose answer was lost but which applied).
    held: int = 0


@dataclass(frozen=True)
class Fault:
    name: str
    #: Member 0 (where drover is) leads etcd during the fault, or a follower.
    drover_on_leader: bool
    #: "stop" (SIGSTOP/SIGCONT), "kill" (kill -9 then restart), "rolling"
    #: (kill -9 and restart each member in turn).
    action: str
    #: Which member: "drover" (member 0) or "leader" (whoever leads).
    target: str = "drover"


FAULTS: dict[str, Fault] = {
    "kill-follower-in-use": Fault("kill -9 the member drover uses (a follower)", False, "kill"),
    "kill-leader": Fault("kill -9 the etcd leader (drover on a follower)", False, "kill",
                         "leader"),
    "stop-leader-in-use": Fault("SIGSTOP the etcd leader drover uses", True, "stop"),
    "stop-follower-in-use": Fault("SIGSTOP a follower drover uses", False, "stop"),
    "rolling-restart": Fault("restart every member in turn (kill -9 + start)", False,
                             "rolling"),
}


@dataclass
class _Load:
    write_ok: list[float] = field(default_factory=list)
    write_failed: int = 0
    outcome_unknown: int = 0
    dequeued: list[float] = field(default_factory=list)
    written: set[str] = field(default_factory=set)
    maybe_written: set[str] = field(default_factory=set)
    acked: dict[str, int] = field(default_factory=dict)
    ack_failed: set[str] = field(default_factory=set)
    leader_changes: list[float] = field(default_factory=list)


def _gap(times: list[float], start: float, end: float) -> float:
    """Longest interval without a success within [start, end]."""
    inside = sorted(t for t in times if start <= t <= end)
    points = [start, *inside, end]
    return max(b - a for a, b in itertools.pairwise(points))


class Drill:
    """The cluster, the services and the load. Use as an async context."""

    def __init__(self, config: DrillConfig | None = None,
                 log: Callable[[str], None] = lambda _m: None) -> None:
        self.config = config or DrillConfig()
        self.log = log
        self.cluster = EtcdCluster(size=3, name="drill")
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.addresses: dict[str, str] = {}
        self.load = _Load()
        self._tasks: list[asyncio.Task[None]] = []
        self._inflight: set[asyncio.Task[None]] = set()
        self._stop = asyncio.Event()
        self._ids = itertools.count()
        self._broker = ""
        self._etcd: EtcdClient | None = None
        self._channels: dict[str, grpc.aio.Channel] = {}
        self.log_dir = tempfile.mkdtemp(prefix="drover-drill-")

    def logs(self, lines: int = 15) -> str:
        """The last lines of every service's log (for a failure report)."""
        out = []
        for name in self.procs:
            with open(os.path.join(self.log_dir, f"{name}.log"), errors="replace") as f:
                tail = f.read().splitlines()[-lines:]
            out.append(f"--- {name}\n" + "\n".join(tail))
        return "\n".join(out)

    # -- setup ---------------------------------------------------------------

    def _spawn(self, name: str, service: str, *extra: str) -> None:
        port = free_port()
        args = [sys.executable, "-m", "drover.cli.main", "serve", service,
                "--etcd", self.cluster.endpoint_list, "--etcd-prefix", PREFIX,
                "--listen", f"127.0.0.1:{port}", "--replica", name, "--log-level", "INFO",
                *extra]
        if self.config.session_ttl is not None:
            args += ["--session-ttl", str(self.config.session_ttl)]
        env = dict(os.environ, DROVER_ETCD_ORDER="given")
        log_path = os.path.join(self.log_dir, f"{name}.log")
        with open(log_path, "ab") as out:
            self.procs[name] = subprocess.Popen(args, env=env, stdout=out, stderr=out)
        self.addresses[name] = f"127.0.0.1:{port}"
        if not wait_for_port("127.0.0.1", port, 30):
            raise RuntimeError(f"{name} did not start")

    async def __aenter__(self) -> Drill:
        await asyncio.to_thread(self.cluster.start)
        try:
            await asyncio.to_thread(self._spawn, "state", "state")
            for b in ("broker-a", "broker-b"):
                await asyncio.to_thread(self._spawn, b, "broker", "--state-address",
                                        self.addresses["state"])
            self._etcd = await connect(EtcdSettings(endpoints=self.cluster.endpoints,
                                                    prefix=PREFIX), purpose="control")
            self._tasks.append(asyncio.create_task(self._observe()))
            self._tasks.append(asyncio.create_task(self._writer()))
            self._tasks += [asyncio.create_task(self._worker()) for _ in
                            range(self.config.workers)]
            await self._wait_flowing(60)
        except BaseException:
            await self.__aexit__()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        await cancel_and_wait(self._tasks, within=self.config.stop_timeout, what="drill end")
        for ch in self._channels.values():
            await ch.close()
        if self._etcd is not None:
            await self._etcd.close()
        for p in self.procs.values():
            if p.poll() is None:
                p.terminate()
        for p in self.procs.values():
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        await asyncio.to_thread(self.cluster.stop)
        shutil.rmtree(self.log_dir, ignore_errors=True)

    def _channel(self, address: str) -> grpc.aio.Channel:
        ch = self._channels.get(address)
        if ch is None:
            ch = self._channels[address] = grpc.aio.insecure_channel(address)
        return ch

    async def _wait_flowing(self, within: float) -> None:
        """Until writes and dequeues both succeed again."""
        deadline = time.monotonic() + within
        since = time.monotonic()
        while time.monotonic() < deadline:
            load = self.load
            if (any(t > since for t in load.write_ok[-5:])
                    and any(t > since for t in load.dequeued[-5:])):
                return
            await asyncio.sleep(0.1)
        raise RuntimeError(f"load not flowing within {within}s; last write "
                           f"{time.monotonic() - max(self.load.write_ok, default=0):.1f}s ago, "
                           f"last dequeue "
                           f"{time.monotonic() - max(self.load.dequeued, default=0):.1f}s ago; "
                           f"broker {self._broker}\n{self.logs()}")

    # -- load ------------------------------------------------------------------

    async def _observe(self) -> None:
        assert self._etcd is not None
        last: str | None = None
        async for info in observe_changes(EtcdKV(self._etcd), Keyspace(PREFIX), "broker"):
            address = info.address if info else None
            if address:
                self._broker = address
            if last is not None and address and address != last:
                self.load.leader_changes.append(time.monotonic())
            last = address or last

    async def _writer(self) -> None:
        stub = state_pb2_grpc.StateServiceStub(self._channel(self.addresses["state"]))
        period = 1.0 / self.config.write_rate
        nxt = time.monotonic()
        while not self._stop.is_set():
            eid = f"e{next(self._ids):07d}"
            ev = Evaluation(id=eid, namespace="default", priority=50, type="service",
                            job_id=f"job-{eid}", status=PENDING)
            t = asyncio.create_task(self._write_one(stub, ev))
            self._inflight.add(t)
            t.add_done_callback(self._inflight.discard)
            nxt += period
            await asyncio.sleep(max(0.0, nxt - time.monotonic()))

    async def _write_one(self, stub: state_pb2_grpc.StateServiceStub, ev: Evaluation) -> None:
        try:
            await stub.UpsertEvaluations(
                state_pb2.UpsertEvaluationsRequest(evaluations=[ev]), timeout=5)
        except grpc.aio.AioRpcError as e:
            self.load.write_failed += 1
            info = error_info(e)
            if info is not None and info.reason == OutcomeUnknown.reason:
                self.load.outcome_unknown += 1
                self.load.maybe_written.add(ev.id)
            return
        self.load.written.add(ev.id)
        self.load.write_ok.append(time.monotonic())

    async def _worker(self) -> None:
        req = broker_pb2.DequeueRequest(schedulers=["service"])
        req.timeout.FromMilliseconds(500)
        while not self._stop.is_set():
            address = self._broker or self.addresses["broker-a"]
            stub = broker_pb2_grpc.EvalBrokerServiceStub(self._channel(address))
            try:
                got = await stub.Dequeue(req, timeout=3)
                if not got.token:
                    continue
                self.load.dequeued.append(time.monotonic())
                try:
                    await stub.Ack(broker_pb2.AckRequest(eval_id=got.evaluation.id,
                                                         token=got.token), timeout=3)
                except grpc.aio.AioRpcError:
                    self.load.ack_failed.add(got.evaluation.id)
                    raise
                acked = self.load.acked
                acked[got.evaluation.id] = acked.get(got.evaluation.id, 0) + 1
            except grpc.aio.AioRpcError as e:
                hint = leader_hint(e)
                if hint:
                    self._broker = hint
                await asyncio.sleep(0.05)

    # -- faults -----------------------------------------------------------------

    async def run(self, key: str) -> FaultResult:
        fault = FAULTS[key]
        cfg = self.config
        c = self.cluster
        await asyncio.to_thread(c.heal)
        await asyncio.to_thread(c.move_leader, 0 if fault.drover_on_leader else 1)
        # Let every process settle back on member 0 (hold-down + probe).
        await asyncio.sleep(cfg.settle)
        await self._wait_flowing(30)
        changes_before = len(self.load.leader_changes)
        failed0, unknown0 = self.load.write_failed, self.load.outcome_unknown
        writes0 = len(self.load.write_ok)
        target = 0 if fault.target == "drover" else await asyncio.to_thread(c.leader)
        self.log(f"{fault.name}: member {target}")
        t0 = time.monotonic()
        if fault.action == "stop":
            c.pause(target)
            await asyncio.sleep(cfg.fault_seconds)
            c.resume(target)
        elif fault.action == "kill":
            c.kill(target)
            await asyncio.sleep(cfg.fault_seconds)
            await asyncio.to_thread(c.restart, target)
        else:
            for i in range(3):
                c.kill(i)
                await asyncio.sleep(1.0)
                await asyncio.to_thread(c.restart, i)
                await asyncio.sleep(1.0)
        await asyncio.sleep(cfg.settle)
        t2 = time.monotonic()
        lost, held, dup = await self._drain()
        load = self.load
        return FaultResult(
            fault=fault.name,
            write_gap=_gap(load.write_ok, t0 - 1.0, t2),
            dequeue_gap=_gap(load.dequeued, t0 - 1.0, t2),
            writes=len(load.write_ok) - writes0,
            writes_failed=load.write_failed - failed0,
            outcome_unknown=load.outcome_unknown - unknown0,
            leader_changes=len(load.leader_changes) - changes_before,
            lost=lost,
            duplicates=dup,
            held=held,
        )

    async def _drain(self) -> tuple[int, int, int]:
        """Wait until every written evaluation was acked (or its Ack failed:
        it is redelivered only after its nack timeout); then (lost, held,
        duplicates). An evaluation not acked is *held* if state shows it
        settled or the broker still queues it, else *lost*."""
        deadline = time.monotonic() + self.config.drain_timeout
        written = set(self.load.written)  # the load goes on: judge these
        while True:
            missing = written - self.load.acked.keys()
            if not (missing - self.load.ack_failed) or time.monotonic() >= deadline:
                break
            await asyncio.sleep(0.2)
        lost = held = 0
        for eid in sorted(missing):
            if await self._held(eid):
                held += 1
            else:
                lost += 1
        dup = sum(1 for n in self.load.acked.values() if n > 1)
        return lost, held, dup

    async def _held(self, eid: str) -> bool:
        state = state_pb2_grpc.StateServiceStub(self._channel(self.addresses["state"]))
        got = await state.GetEvaluation(state_pb2.GetEvaluationRequest(id=eid), timeout=5)
        if got.evaluation.status != PENDING:
            return True  # settled: an Ack applied although its answer was lost
        for address in {self._broker, *(self.addresses[b] for b in ("broker-a", "broker-b"))}:
            broker = broker_pb2_grpc.EvalBrokerServiceStub(self._channel(address))
            try:
                resp = await broker.ListQueue(broker_pb2.ListQueueRequest(prefix=eid), timeout=5)
            except grpc.aio.AioRpcError:
                continue  # a follower: ask the next
            return any(q.evaluation.id == eid for q in resp.evaluations)
        return False
