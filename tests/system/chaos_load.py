"""The chaos test's load and its record of what every client saw.

Every call the load makes goes through the proxy on one channel whose
interceptor records it: method, start and end on the monotonic clock, status,
and for the broker's calls every delivery (Dequeue) and every outcome sent
(Ack, Nack, AckBatch) with its token. The judges in test_chaos.py read only
this record and the final state: they never trust a client's own bookkeeping.

The load: two reference scheduler workers (batched Dequeue/AckBatch with
follow-ups), simulated nodes, a driver registering batch jobs (evaluation
churn) and service jobs with rolling updates (deployments), and a deleter
that pauses the broker for a moment and deletes an evaluation a worker is
holding (the resurrection race).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf.duration_pb2 import Duration

from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import evaluation_pb2, job_pb2
from drover.rpc.remote import error_info

#: Broker methods whose calls are long polls (may wait their own timeout).
LONG_POLLS = {"Dequeue": 2.0}


@dataclass(frozen=True)
class Call:
    method: str
    start: float
    end: float
    code: str
    #: For a long poll, how long the client asked it to wait.
    poll_wait: float = 0.0
    #: A failed call's ErrorInfo reason, if the server sent one.
    reason: str = ""


@dataclass(frozen=True)
class Delivery:
    eval_id: str
    job_id: str
    token: str
    start: float
    end: float


@dataclass(frozen=True)
class Outcome:
    """An Ack or Nack sent for a delivery (``ok``: the broker accepted it)."""

    token: str
    eval_id: str
    start: float
    end: float
    ok: bool


@dataclass
class Record:
    calls: list[Call] = field(default_factory=list)
    deliveries: list[Delivery] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    #: Every evaluation id the load learnt exists (created or listed).
    evals: set[str] = field(default_factory=set)
    deleted: set[str] = field(default_factory=set)
    #: Deletes whose answer was lost (UNAVAILABLE): applied or not, unknown.
    maybe_deleted: set[str] = field(default_factory=set)
    deployments: set[str] = field(default_factory=set)
    registered: int = 0


def _name(method: Any) -> str:
    m = method.decode() if isinstance(method, bytes) else str(method)
    return m.rsplit("/", 1)[-1]


class Recorder(grpc.aio.UnaryUnaryClientInterceptor):
    def __init__(self, record: Record) -> None:
        self.r = record

    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        name = _name(details.method)
        start = time.monotonic()
        try:
            call = await continuation(details, request)
            resp = await call
        except grpc.aio.AioRpcError as e:
            info = error_info(e)
            self._call(name, start, e.code().name, request, info.reason if info else "")
            self._failed(name, request, start)
            raise
        self._call(name, start, "OK", request)
        self._answered(name, request, resp, start, time.monotonic())
        return resp

    def _call(self, name: str, start: float, code: str, request: Any, reason: str = "") -> None:
        wait = 0.0
        if name in LONG_POLLS:
            wait = request.timeout.ToMilliseconds() / 1000
        self.r.calls.append(Call(name, start, time.monotonic(), code, wait, reason))

    def _failed(self, name: str, request: Any, start: float) -> None:
        # An outcome whose answer was lost may still have been applied: it is
        # recorded as sent (not ok), so a judge never counts on it either way.
        end = time.monotonic()
        if name in ("Ack", "Nack"):
            self.r.outcomes.append(Outcome(request.token, request.eval_id, start, end, False))
        elif name == "AckBatch":
            for a in request.acks:
                self.r.outcomes.append(Outcome(a.token, a.eval_id, start, end, False))

    def _answered(self, name: str, request: Any, resp: Any, start: float, end: float) -> None:
        r = self.r
        if name == "Dequeue" and resp.evaluation.id:
            for d in [resp, *resp.additional]:
                r.deliveries.append(Delivery(d.evaluation.id, d.evaluation.job_id, d.token,
                                             start, end))
                r.evals.add(d.evaluation.id)
        elif name in ("Ack", "Nack"):
            r.outcomes.append(Outcome(request.token, request.eval_id, start, end, True))
        elif name == "AckBatch":
            acks = {a.eval_id: a for a in request.acks}
            for o in resp.outcomes:
                a = acks.get(o.eval_id)
                if a is None:
                    continue
                r.outcomes.append(Outcome(a.token, a.eval_id, start, end, not o.code))
                if not o.code:
                    r.evals.update(f.id for f in a.follow_ups)
        elif name == "RegisterJob":
            r.registered += 1
            if resp.eval_id:
                r.evals.add(resp.eval_id)
            if resp.deployment_id:
                r.deployments.add(resp.deployment_id)


def _duration(seconds: float) -> Duration:
    d = Duration()
    d.FromMilliseconds(int(seconds * 1000))
    return d


def batch_job(jid: str) -> job_pb2.Job:
    return job_pb2.Job(
        id=jid, type=job_pb2.JOB_TYPE_BATCH, datacenters=["dc1"],
        task_groups=[job_pb2.TaskGroup(name="g", count=1, meta={"sim.run_for": "0.5"}, tasks=[
            job_pb2.Task(name="t", driver="sim",
                         resources=job_pb2.Resources(cpu=50, memory_mb=32))])])


def service_job(jid: str, version: int) -> job_pb2.Job:
    update = job_pb2.UpdateStrategy(max_parallel=1, min_healthy_time=_duration(0.3),
                                    healthy_deadline=_duration(20),
                                    progress_deadline=_duration(120))
    return job_pb2.Job(
        id=jid, type=job_pb2.JOB_TYPE_SERVICE, datacenters=["dc1"],
        task_groups=[job_pb2.TaskGroup(name="g", count=2, update=update, tasks=[
            job_pb2.Task(name="t", driver="sim", config={"image": f"{jid}:{version}"},
                         resources=job_pb2.Resources(cpu=50, memory_mb=32))])])


async def _quietly(coro: Any) -> Any:
    """A call whose failure the load shrugs off (faults make many)."""
    try:
        return await coro
    except grpc.aio.AioRpcError:
        return None


class Driver:
    """Registers jobs while ``running``: batch jobs often, service jobs
    (and new versions of them: rolling updates) now and then."""

    def __init__(self, ch: grpc.aio.Channel, record: Record, rng: random.Random) -> None:
        self.state = state_pb2_grpc.StateServiceStub(ch)
        self.r = record
        self.rng = rng
        self.running = True
        self.versions: dict[str, int] = {}

    async def run(self) -> None:
        n = 0
        while self.running:
            n += 1
            if n % 4 == 0:
                jid = f"svc-{self.rng.randrange(4)}"
                v = self.versions.get(jid, -1) + 1
                resp = await _quietly(self.state.RegisterJob(
                    state_pb2.RegisterJobRequest(job=service_job(jid, v)), timeout=10))
                if resp is not None:
                    self.versions[jid] = v
            else:
                await _quietly(self.state.RegisterJob(
                    state_pb2.RegisterJobRequest(job=batch_job(f"batch-{n}")), timeout=10))
            await asyncio.sleep(self.rng.uniform(0.2, 0.5))


class Observer:
    """Lists evaluations now and then: an id once seen must never vanish."""

    def __init__(self, ch: grpc.aio.Channel, record: Record) -> None:
        self.state = state_pb2_grpc.StateServiceStub(ch)
        self.r = record

    async def run(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            resp = await _quietly(self.state.ListEvaluations(state_pb2.ListEvaluationsRequest(
                page_size=1000, order_by="create_index desc"), timeout=10))
            if resp is not None:
                # Deleted ones may still be listed by a replica a moment behind.
                self.r.evals.update(e.id for e in resp.evaluations if e.id not in self.r.deleted)


class Deleter:
    """Every few seconds: pause the broker, delete one evaluation of a batch
    job that a worker holds (delivered, no outcome yet), unpause. The
    worker's Ack races the delete: the evaluation must stay deleted."""

    def __init__(self, ch: grpc.aio.Channel, record: Record, rng: random.Random) -> None:
        self.state = state_pb2_grpc.StateServiceStub(ch)
        self.r = record
        self.rng = rng
        self.attempts = 0

    async def _pause(self, paused: bool) -> None:
        while True:  # the broker must not be left paused: retried until done
            got = await _quietly(self.state.GetSchedulerConfig(
                state_pb2.GetSchedulerConfigRequest(), timeout=5))
            if got is not None:
                cfg = got.config
                cfg.pause_eval_broker = paused
                if await _quietly(self.state.SetSchedulerConfig(
                        state_pb2.SetSchedulerConfigRequest(config=cfg), timeout=5)) is not None:
                    return
            await asyncio.sleep(0.2)

    async def run(self) -> None:
        try:
            while True:
                await asyncio.sleep(self.rng.uniform(2.0, 4.0))
                acked = {o.token for o in self.r.outcomes}
                held = [d for d in self.r.deliveries[-20:]
                        if d.token not in acked and d.job_id.startswith("batch-")]
                if not held:
                    continue
                victim = self.rng.choice(held).eval_id
                self.attempts += 1
                await self._pause(True)
                try:
                    # Unknown until answered: a delete cancelled in flight
                    # (the load stopping) may still have been applied.
                    known = victim in self.r.maybe_deleted  # an earlier try's
                    self.r.maybe_deleted.add(victim)
                    try:
                        resp = await self.state.DeleteEvaluations(
                            state_pb2.DeleteEvaluationsRequest(ids=[victim]), timeout=5)
                    except grpc.aio.AioRpcError as e:
                        if e.code() not in (grpc.StatusCode.UNAVAILABLE,
                                            grpc.StatusCode.DEADLINE_EXCEEDED) and not known:
                            self.r.maybe_deleted.discard(victim)
                    else:
                        if not known:
                            self.r.maybe_deleted.discard(victim)
                        if resp.deleted == 1:
                            self.r.deleted.add(victim)
                finally:
                    await self._pause(False)
        except asyncio.CancelledError:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self._pause(False), 10)
            raise


TERMINAL_EVAL = {evaluation_pb2.EVALUATION_STATUS_COMPLETE,
                 evaluation_pb2.EVALUATION_STATUS_FAILED,
                 evaluation_pb2.EVALUATION_STATUS_CANCELED}


async def list_all(stub: Any, method: str, request: Any, field_name: str) -> list[Any]:
    """Every object of a paged List call."""
    out: list[Any] = []
    token = ""
    while True:
        request.page_token = token
        resp = await getattr(stub, method)(request, timeout=30)
        out.extend(getattr(resp, field_name))
        token = resp.next_page_token
        if not token:
            return out
