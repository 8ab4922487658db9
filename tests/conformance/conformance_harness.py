"""The conformance suite's cluster: one `drover dev --nodes 0` (no worker,
no nodes), the WORKER under test started by the suite, simulated nodes per
scenario, and the reads a scenario judges by.

The worker contract (docs/worker-protocol.md, "Running a worker under the
conformance suite"): the command in ``DROVER_CONFORMANCE_WORKER`` (``make
conformance WORKER="..."``; default the Python reference, ``drover worker``)
is split like a shell line, gets ``--address HOST:PORT`` (the dev proxy)
appended and ``DROVER_ADDR`` set to the same address, and is stopped with
SIGTERM (SIGKILL 10 s later). Its output goes to a log file that no
scenario reads: every judgement is a state read over gRPC.

Scenarios share the cluster; each keeps to its own datacenter(s), node
prefix and job ids, so they do not see each other's work.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
from polling import until

from drover.api.deployments.v1 import deployments_pb2, deployments_pb2_grpc
from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import (
    allocation_pb2,
    deployment_pb2,
    evaluation_pb2,
    job_pb2,
    node_pb2,
)
from drover.dev.supervisor import free_layout
from drover.jobspec.spelling import parse_spec

WORKER_ENV = "DROVER_CONFORMANCE_WORKER"
NS = "default"
RUN = allocation_pb2.ALLOC_DESIRED_STATUS_RUN
STOP = allocation_pb2.ALLOC_DESIRED_STATUS_STOP
RUNNING = allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING
FAILED = allocation_pb2.ALLOC_CLIENT_STATUS_FAILED
LOST = allocation_pb2.ALLOC_CLIENT_STATUS_LOST
SUCCESSFUL = deployment_pb2.DEPLOYMENT_STATUS_SUCCESSFUL
DEP_FAILED = deployment_pb2.DEPLOYMENT_STATUS_FAILED
READY = node_pb2.NODE_STATUS_READY
INELIGIBLE = node_pb2.NODE_SCHEDULING_ELIGIBILITY_INELIGIBLE
BLOCKED = evaluation_pb2.EVALUATION_STATUS_BLOCKED
#: How long any one outcome may take on a loaded 2-core machine.
WITHIN = 60.0


def worker_command() -> list[str]:
    """The WORKER under test, as argv (without the appended address)."""
    line = os.environ.get(WORKER_ENV, "").strip()
    return shlex.split(line) if line else [sys.executable, "-m", "drover.cli.main", "worker"]


def _stop(proc: subprocess.Popen[bytes], within: float = 10.0) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(within)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


class Cluster:
    """The shared dev suite: its address, the processes the suite started,
    and typed reads and writes over gRPC through the proxy."""

    def __init__(self, address: str, log_dir: Path,
                 dev: subprocess.Popen[bytes] | None = None) -> None:
        self.address = address
        self.log_dir = log_dir
        self.dev = dev
        self.env = {**{k: v for k, v in os.environ.items() if k != WORKER_ENV},
                    "DROVER_ADDR": address}
        self.channel = grpc.insecure_channel(address)
        self.state = state_pb2_grpc.StateServiceStub(self.channel)
        self.deployments = deployments_pb2_grpc.DeploymentWatcherServiceStub(self.channel)
        self._procs: list[subprocess.Popen[bytes]] = []
        #: The ids of the jobs registered, in order (a failure's report).
        self.jobs_run: list[str] = []

    # -- processes ---------------------------------------------------------

    def dev_log_tail(self, lines: int = 40) -> str:
        """The last lines of `drover dev`'s output, and whether it still runs
        (a failure's report: a scenario that cannot reach the proxy says why)."""
        code = self.dev.poll() if self.dev is not None else None
        head = "drover dev is running" if code is None else f"drover dev exited with code {code}"
        try:
            text = (self.log_dir / "dev.log").read_text(errors="replace")
        except OSError as e:
            return f"{head}; its log could not be read: {e}"
        return "\n".join([head + "; the end of its log:", *text.splitlines()[-lines:]])

    def _spawn(self, argv: list[str], log_name: str) -> subprocess.Popen[bytes]:
        log = (self.log_dir / log_name).open("ab")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=self.env)
        log.close()
        self._procs.append(proc)
        return proc

    def start_worker(self, name: str = "worker") -> subprocess.Popen[bytes]:
        """The WORKER under test, pointed at the proxy."""
        return self._spawn([*worker_command(), "--address", self.address], f"{name}.log")

    @contextlib.contextmanager
    def nodes(self, prefix: str, count: int, datacenter: str, cpu: int = 1000,
              memory: int = 1024) -> Iterator[list[str]]:
        """``count`` simulated nodes ``prefix-0..`` in ``datacenter``, ready;
        marked down and stopped at the end."""
        proc = self.start_nodes(prefix, count, datacenter, cpu, memory)
        try:
            yield [f"{prefix}-{i}" for i in range(count)]
        finally:
            self.stop(proc)

    def start_nodes(self, prefix: str, count: int, datacenter: str, cpu: int = 1000,
                    memory: int = 1024) -> subprocess.Popen[bytes]:
        proc = self._spawn([sys.executable, "-m", "drover.cli.main", "sim", "nodes", str(count),
                            "--prefix", prefix, "--datacenter", datacenter, "--cpu", str(cpu),
                            "--memory", str(memory)], f"sim-{prefix}.log")
        ids = {f"{prefix}-{i}" for i in range(count)}
        until(lambda: ids <= {n.id for n in self.list_nodes(datacenter) if n.status == READY},
              WITHIN, f"{count} nodes {prefix}-* ready in {datacenter}")
        return proc

    def stop(self, proc: subprocess.Popen[bytes]) -> None:
        _stop(proc)
        if proc in self._procs:
            self._procs.remove(proc)

    def close(self) -> None:
        for proc in reversed(self._procs):
            _stop(proc)
        self._procs.clear()
        self.channel.close()

    # -- writes (what a user does; the worker is judged by what follows) --

    def run_job(self, spec: dict[str, Any]) -> state_pb2.RegisterJobResponse:
        job = parse_spec(spec, job_pb2.Job())  # as `drover job run` reads a spec
        job.namespace = job.namespace or NS
        if job.id not in self.jobs_run:
            self.jobs_run.append(job.id)
        resp: state_pb2.RegisterJobResponse = self.state.RegisterJob(
            state_pb2.RegisterJobRequest(job=job), timeout=30)
        return resp

    def stop_job(self, job_id: str) -> None:
        self.state.DeregisterJob(state_pb2.DeregisterJobRequest(namespace=NS, id=job_id),
                                 timeout=30)

    def promote(self, deployment_id: str) -> None:
        self.deployments.PromoteDeployment(deployments_pb2.PromoteDeploymentRequest(
            namespace=NS, deployment_id=deployment_id, all=True), timeout=30)

    def set_eligible(self, node_id: str, eligible: bool) -> None:
        self.state.UpdateNodeStatus(state_pb2.UpdateNodeStatusRequest(
            id=node_id, scheduling_eligibility=(
                node_pb2.NODE_SCHEDULING_ELIGIBILITY_ELIGIBLE if eligible
                else node_pb2.NODE_SCHEDULING_ELIGIBILITY_INELIGIBLE)), timeout=30)

    def mark_down(self, node_id: str) -> None:
        self.state.UpdateNodeStatus(state_pb2.UpdateNodeStatusRequest(
            id=node_id, status=node_pb2.NODE_STATUS_DOWN), timeout=30)

    def drain(self, node_id: str) -> None:
        self.state.UpdateNodeDrain(state_pb2.UpdateNodeDrainRequest(
            id=node_id, drain_strategy=node_pb2.DrainStrategy()), timeout=30)

    # -- reads: what the cluster holds -------------------------------------

    def list_nodes(self, datacenter: str) -> list[node_pb2.Node]:
        resp = self.state.ListNodes(state_pb2.ListNodesRequest(
            filter=f'datacenter == "{datacenter}"', page_size=1000), timeout=30)
        return list(resp.nodes)

    def node(self, node_id: str) -> node_pb2.Node:
        node: node_pb2.Node = self.state.GetNode(
            state_pb2.GetNodeRequest(id=node_id), timeout=30).node
        return node

    def allocs(self, job_id: str) -> list[allocation_pb2.Allocation]:
        out: list[allocation_pb2.Allocation] = []
        token = ""
        while True:
            resp = self.state.ListAllocations(state_pb2.ListAllocationsRequest(
                namespace=NS, filter=f'job_id == "{job_id}"', page_size=500,
                page_token=token), timeout=30)
            out.extend(resp.allocations)
            token = resp.next_page_token
            if not token:
                return out

    def live(self, job_id: str) -> list[allocation_pb2.Allocation]:
        """Allocations meant to run and running."""
        return [a for a in self.allocs(job_id)
                if a.desired_status == RUN and a.client_status == RUNNING]

    def healthy(self, job_id: str) -> list[allocation_pb2.Allocation]:
        return [a for a in self.live(job_id)
                if a.deployment_status.HasField("healthy") and a.deployment_status.healthy]

    def job(self, job_id: str) -> job_pb2.Job:
        job: job_pb2.Job = self.state.GetJob(
            state_pb2.GetJobRequest(namespace=NS, id=job_id), timeout=30).job
        return job

    def describe(self, job_id: str) -> str:
        """The job's evaluations and allocations in one line each (for a
        failure message)."""
        evs = sorted(self.evaluations(job_id), key=lambda e: e.create_index)
        allocs = sorted(self.allocs(job_id), key=lambda a: a.create_index)
        return "\n".join(
            [f"eval {e.id[:8]} {evaluation_pb2.EvaluationStatus.Name(e.status)} "
             f"{e.triggered_by} node={e.node_id} index={e.create_index}/{e.modify_index} "
             f"{e.status_description!r}" for e in evs]
            + [f"alloc {a.id[:8]} {a.name} node={a.node_id} v{a.job_version} "
               f"{allocation_pb2.AllocDesiredStatus.Name(a.desired_status)} "
               f"{allocation_pb2.AllocClientStatus.Name(a.client_status)} "
               f"index={a.create_index}" for a in allocs])

    def deployments_of(self, job_id: str) -> list[deployment_pb2.Deployment]:
        resp = self.state.ListDeployments(state_pb2.ListDeploymentsRequest(
            namespace=NS, filter=f'job_id == "{job_id}"'), timeout=30)
        return sorted(resp.deployments, key=lambda d: d.create_index)

    def evaluations(self, job_id: str) -> list[evaluation_pb2.Evaluation]:
        resp = self.state.ListEvaluations(state_pb2.ListEvaluationsRequest(
            namespace=NS, filter=f'job_id == "{job_id}"', page_size=500), timeout=30)
        return list(resp.evaluations)


@contextlib.contextmanager
def dev_cluster(log_dir: Path) -> Iterator[Cluster]:
    """`drover dev --nodes 0` (no worker, no nodes) on free ports, and the
    WORKER under test; everything stopped at the end. The suite is used once
    `drover dev` says it is up: its proxy answers before the last of its
    children (the other replicas, the web UI) are serving, and a child that
    fails then stops the whole suite."""
    offset, lay = free_layout()
    log_path = log_dir / "dev.log"
    log = log_path.open("w")
    # drover warns of DROVER_* variables it does not know: the suite's own is not its
    env = {k: v for k, v in os.environ.items() if k != WORKER_ENV}
    dev = subprocess.Popen(
        [sys.executable, "-m", "drover.cli.main", "dev", "--port-offset", str(offset),
         "--nodes", "0"], stdout=log, stderr=subprocess.STDOUT, env=env)
    cluster = Cluster(lay.address("proxy"), log_dir, dev)
    try:
        until(lambda: "drover is up" in log_path.read_text() or dev.poll() is not None, 120,
              "drover dev saying it is up")
        assert dev.poll() is None, f"drover dev exited:\n{cluster.dev_log_tail()}"
        until(lambda: _answers(cluster), 90, "the state service answering through the proxy")
        cluster.start_worker()
        yield cluster
    finally:
        cluster.close()
        _stop(dev, 20)
        log.close()


def _answers(cluster: Cluster) -> bool:
    try:
        cluster.state.ListNodes(state_pb2.ListNodesRequest(), timeout=5)
    except grpc.RpcError:
        return False
    return True


def service(job_id: str, datacenters: list[str], count: int, cpu: int = 100,
            memory: int = 64, **group: Any) -> dict[str, Any]:
    """A service job spec (the JSON form `drover job run` takes)."""
    return {"id": job_id, "type": "service", "datacenters": datacenters, "task_groups": [{
        "name": "g", "count": count, **group,
        "tasks": [{"name": "t", "driver": "sim",
                   "resources": {"cpu": cpu, "memory_mb": memory}}]}]}
