"""The rolling-upgrade test's workload and its judges' reads.

Service jobs rolled out one allocation at a time (canaries auto-promoted on
every other job), scale changes and batch jobs, through both proxies
(:class:`drover.rpc.failover.FailoverChannel`, this tree's client), while the
cluster's processes are replaced under it. Every call is recorded; a call that
ends UNAVAILABLE (``OUTCOME_UNKNOWN`` included: its server went away mid-call)
is retried, as a client should (every write here is idempotent: the same spec
again, the same count again). Any other error is a failed call, the finding.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import grpc

from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import allocation_pb2, deployment_pb2, job_pb2
from drover.rpc.remote import remote_status

SERVICE_JOBS = 4
RETRIES = 8
CALL_TIMEOUT = 15.0
ACTIVE = 'status == "running" || status == "paused"'
RUNNING = deployment_pb2.DEPLOYMENT_STATUS_RUNNING
SUCCESSFUL = deployment_pb2.DEPLOYMENT_STATUS_SUCCESSFUL
FAILED = deployment_pb2.DEPLOYMENT_STATUS_FAILED


def service_job(i: int, image: str, count: int) -> job_pb2.Job:
    task = job_pb2.Task(name="server", driver="docker", config={"image": image},
                        resources=job_pb2.Resources(cpu=100, memory_mb=64))
    canary = i % 2 == 0
    update = job_pb2.UpdateStrategy(max_parallel=1, canary=1 if canary else 0,
                                    auto_promote=canary)
    update.min_healthy_time.FromMilliseconds(1500)
    group = job_pb2.TaskGroup(name="web", count=count, tasks=[task], update=update)
    return job_pb2.Job(id=f"svc-{i}", namespace="default", type=job_pb2.JOB_TYPE_SERVICE,
                       datacenters=["dc1"], task_groups=[group])


def batch_job(n: int) -> job_pb2.Job:
    task = job_pb2.Task(name="run", driver="docker", config={"image": "batch:1"},
                        resources=job_pb2.Resources(cpu=100, memory_mb=64))
    return job_pb2.Job(id=f"batch-{n}", namespace="default", type=job_pb2.JOB_TYPE_BATCH,
                       datacenters=["dc1"],
                       task_groups=[job_pb2.TaskGroup(name="b", count=2, tasks=[task])])


@dataclass(frozen=True)
class Call:
    at: float
    method: str
    code: str
    reason: str
    #: The versions the cluster's processes ran when the call ended.
    phase: str


@dataclass
class Workload:
    ch: Any
    rng: random.Random = field(default_factory=lambda: random.Random(41))
    phase: str = "old"
    calls: list[Call] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    counts: dict[int, int] = field(default_factory=lambda: dict.fromkeys(range(SERVICE_JOBS), 3))
    images: dict[int, int] = field(default_factory=lambda: dict.fromkeys(range(SERVICE_JOBS), 0))
    batches: int = 0
    steps: int = 0

    def __post_init__(self) -> None:
        self.state = state_pb2_grpc.StateServiceStub(self.ch)
        self.t0 = time.monotonic()

    async def call(self, method: str, fn: Callable[..., Awaitable[Any]], request: Any) -> Any:
        """``fn(request)``, retried while it ends UNAVAILABLE; None when it failed."""
        for _ in range(RETRIES):
            try:
                resp = await fn(request, timeout=CALL_TIMEOUT)
            except grpc.aio.AioRpcError as e:
                st = remote_status(e)
                self.calls.append(Call(time.monotonic() - self.t0, method, st.code, st.reason,
                                       self.phase))
                if st.code != "UNAVAILABLE":
                    self.failures.append(f"{self.phase}: {method} {st.code} {st.reason}: "
                                         f"{st.details}")
                    return None
                await asyncio.sleep(0.5)
                continue
            self.calls.append(Call(time.monotonic() - self.t0, method, "OK", "", self.phase))
            return resp
        self.failures.append(f"{self.phase}: {method} UNAVAILABLE {RETRIES} times in a row")
        return None

    async def register(self, job: job_pb2.Job) -> Any:
        return await self.call("RegisterJob", self.state.RegisterJob,
                               state_pb2.RegisterJobRequest(job=job))

    async def rollout(self, i: int, image: str | None = None) -> Any:
        self.images[i] += 1
        return await self.register(service_job(i, image or f"web:{self.images[i]}",
                                               self.counts[i]))

    async def setup(self) -> None:
        for i in range(SERVICE_JOBS):
            await self.register(service_job(i, "web:0", self.counts[i]))

    async def step(self) -> None:
        self.steps += 1
        r = self.rng.random()
        i = self.rng.randrange(SERVICE_JOBS)
        if r < 0.4:
            await self.rollout(i)
        elif r < 0.6:
            self.counts[i] = self.rng.randint(2, 4)
            await self.call("ScaleJob", self.state.ScaleJob, state_pb2.ScaleJobRequest(
                namespace="default", id=f"svc-{i}", group="web", count=self.counts[i],
                message="upgrade test"))
        elif r < 0.85:
            self.batches += 1
            await self.register(batch_job(self.batches))
        else:  # reads, served by whichever version holds the replica
            await self.call("GetJob", self.state.GetJob,
                            state_pb2.GetJobRequest(namespace="default", id=f"svc-{i}"))
            await self.call("ListEvaluations", self.state.ListEvaluations,
                            state_pb2.ListEvaluationsRequest(namespace="*", page_size=50))

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await self.step()
            await asyncio.sleep(self.rng.uniform(0.8, 1.6))

    async def ids(self) -> dict[str, set[str]]:
        """Every object's id per kind (what the judges compare before/after)."""
        s = self.state
        listings: dict[str, tuple[Any, Any, str]] = {
            "jobs": (s.ListJobs, state_pb2.ListJobsRequest, "jobs"),
            "evaluations": (s.ListEvaluations, state_pb2.ListEvaluationsRequest, "evaluations"),
            "deployments": (s.ListDeployments, state_pb2.ListDeploymentsRequest, "deployments"),
            "allocations": (s.ListAllocations, state_pb2.ListAllocationsRequest, "allocations"),
            "nodes": (s.ListNodes, state_pb2.ListNodesRequest, "nodes"),
        }
        out: dict[str, set[str]] = {}
        for kind, (fn, make, attr) in listings.items():
            out[kind] = set()
            token = ""
            while True:
                req = make(page_size=500, page_token=token)
                if kind != "nodes":
                    req.namespace = "*"
                resp = await self.call(f"List {kind}", fn, req)
                assert resp is not None, f"listing {kind} failed: {self.failures[-1:]}"
                out[kind].update(o.id for o in getattr(resp, attr))
                token = resp.next_page_token
                if not token:
                    break
        return out

    async def deployments(self, flt: str = "") -> list[deployment_pb2.Deployment]:
        out: list[deployment_pb2.Deployment] = []
        token = ""
        while True:
            resp = await self.call("ListDeployments", self.state.ListDeployments,
                                   state_pb2.ListDeploymentsRequest(
                                       namespace="*", filter=flt, page_size=500,
                                       page_token=token))
            if resp is None:
                return out
            out.extend(resp.deployments)
            token = resp.next_page_token
            if not token:
                return out

    async def settled(self, within: float) -> list[deployment_pb2.Deployment]:
        """Until no deployment is active; those still active after ``within`` s."""
        deadline = time.monotonic() + within
        while True:
            active = await self.deployments(ACTIVE)
            if not active or time.monotonic() > deadline:
                return active
            await asyncio.sleep(1.0)

    async def evaluations(self, flt: str) -> int:
        """How many evaluations match ``flt`` (-1: the count failed)."""
        resp = await self.call("CountEvaluations", self.state.CountEvaluations,
                               state_pb2.CountEvaluationsRequest(namespace="*", filter=flt))
        return -1 if resp is None else int(resp.count)

    async def drained(self, within: float) -> int:
        """Until no evaluation is pending; how many still are after ``within`` s."""
        deadline = time.monotonic() + within
        while True:
            pending = await self.evaluations('status == "pending"')
            if pending == 0 or time.monotonic() > deadline:
                return pending
            await asyncio.sleep(1.0)

    async def describe_evaluations(self, flt: str) -> str:
        """The first evaluations matching ``flt``, one short line each."""
        resp = await self.call("ListEvaluations", self.state.ListEvaluations,
                               state_pb2.ListEvaluationsRequest(namespace="*", filter=flt,
                                                                page_size=10))
        if resp is None:
            return "(could not list them)"
        return "; ".join(f"{e.id[:8]} {e.job_id} {e.type} by {e.triggered_by} "
                         f"{e.status_description!r}" for e in resp.evaluations)

    async def describe_deployment(self, d: deployment_pb2.Deployment) -> str:
        """A stuck deployment as the judges report it: its groups' counts and
        its allocations' statuses (what to look for in the logs)."""
        groups = "; ".join(
            f"{name}: placed {g.placed_allocs}/{g.desired_total} healthy {g.healthy_allocs} "
            f"unhealthy {g.unhealthy_allocs} canaries {len(g.placed_canaries)}/"
            f"{g.desired_canaries} promoted {g.promoted}" for name, g in d.task_groups.items())
        resp = await self.call("ListAllocations", self.state.ListAllocations,
                               state_pb2.ListAllocationsRequest(
                                   namespace="*", filter=f'deployment_id == "{d.id}"',
                                   page_size=50))
        allocs = "" if resp is None else ", ".join(
            f"{a.id[:8]} on {a.node_id} {allocation_pb2.AllocClientStatus.Name(a.client_status)}"
            f" healthy={_health(a)}" for a in resp.allocations)
        return (f"{d.id[:8]} {d.job_id} v{d.job_version} "
                f"{deployment_pb2.DeploymentStatus.Name(d.status)} ({groups}) allocs [{allocs}]")

    async def deployed(self, job_id: str, version: int, within: float) -> str:
        """The status of ``job_id``'s deployment of ``version`` once terminal
        (or as it is after ``within`` s)."""
        deadline = time.monotonic() + within
        status = "none"
        while time.monotonic() < deadline:
            for d in await self.deployments(f'job_id == "{job_id}"'):
                if d.job_version == version:
                    status = deployment_pb2.DeploymentStatus.Name(d.status)
                    if d.status not in (RUNNING, deployment_pb2.DEPLOYMENT_STATUS_PAUSED):
                        return status
            await asyncio.sleep(1.0)
        return status


def _health(a: allocation_pb2.Allocation) -> bool | None:
    """An allocation's deployment health: None until its node reported it."""
    return a.deployment_status.healthy if a.deployment_status.HasField("healthy") else None
