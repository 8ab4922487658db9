"""Chaos: every kind of replica killed and frozen under load, then judged.

A real three-member etcd cluster, two state replicas, two brokers, two
deployment watchers and a proxy, all `drover serve` processes on loopback.
Through the proxy, a load (chaos_load.py): two reference scheduler workers,
simulated nodes, batch jobs and rolling updates of service jobs, and a
deleter racing DeleteEvaluations against the workers' Acks. For
``FAULT_SECONDS`` a schedule drawn from ``DROVER_CHAOS_SEED`` kills (-9,
then restarts) or freezes (SIGSTOP, bounded, then SIGCONT) one replica at a
time: a broker, a watcher, a state replica, the proxy or one etcd member.
Then everything is healed and the record is judged:

* no evaluation lost: every id the load learnt of still exists (unless the
  deleter deleted it);
* no deleted evaluation re-created;
* no two overlapping deliveries of one job (see :func:`overlaps`);
* every deployment terminal, and every rolling update that succeeded has the
  watcher's follow-up evaluation;
* no call through the proxy outlived its hold timeout by more than a bound
  (a long poll may wait its own timeout; time the proxy itself was frozen or
  dead does not count against it);
* the history of job writes, compare-and-sets and reads that clients
  recorded meanwhile (through the proxy and straight to each state
  replica: tests/linearizability/job_clients.py) is linearizable.

Rerun a failing schedule with ``DROVER_CHAOS_SEED=<seed printed>``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from linearizability import History, check
from linearizability.job_clients import JobClients
from linearizability.models import JOBS

sys.path.insert(0, str(Path(__file__).resolve().parent))

from chaos_load import (
    TERMINAL_EVAL,
    Call,
    Deleter,
    Delivery,
    Driver,
    Observer,
    Outcome,
    Record,
    Recorder,
    list_all,
)

from drover.api.broker.v1 import broker_pb2, broker_pb2_grpc
from drover.api.proxy.v1 import proxy_pb2, proxy_pb2_grpc
from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import deployment_pb2, evaluation_pb2
from drover.dev.etcd import EtcdCluster
from drover.dev.netcluster import until
from drover.dev.ports import free_port
from drover.rpc.channels import channel_options
from drover.sim.nodes import SimConfig, SimNodes
from drover.tasks import cancel_and_wait
from drover.worker.loop import Worker, WorkerConfig

SEED = int(os.environ.get("DROVER_CHAOS_SEED", "1414"))
FAULT_SECONDS = float(os.environ.get("DROVER_CHAOS_SECONDS", "40"))
TTL = 2
HOLD = 1.5
NACK = 8.0
#: What a call through the proxy may take beyond its hold (and long-poll
#: wait): one retry on the next server plus scheduling on a loaded machine.
SLACK = HOLD + 2.0
TERMINAL_DEPLOYMENT = {deployment_pb2.DEPLOYMENT_STATUS_SUCCESSFUL,
                       deployment_pb2.DEPLOYMENT_STATUS_FAILED,
                       deployment_pb2.DEPLOYMENT_STATUS_CANCELLED}


class Svc:
    """One `drover serve` replica on a fixed port (a restart keeps it)."""

    def __init__(self, service: str, name: str, etcd: str, prefix: str, logs: Path,
                 *extra: str) -> None:
        self.service, self.name = service, name
        self.address = f"127.0.0.1:{free_port()}"
        self.args = [sys.executable, "-m", "drover.cli.main", "serve", service, "--etcd", etcd,
                     "--etcd-prefix", prefix, "--listen", self.address, "--session-ttl",
                     str(TTL), "--replica", name, "--shutdown-grace", "1", *extra]
        self.log = logs / f"{name}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(self.args, stdout=out, stderr=subprocess.STDOUT)

    def signal(self, sig: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, sig)

    def kill(self) -> None:
        self.signal(signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait(10)

    def close(self) -> None:
        self.signal(signal.SIGCONT)
        self.kill()


@dataclass
class Faults:
    """The seeded schedule, applied one fault at a time."""

    rng: random.Random
    targets: list[Svc]
    proxy: Svc
    etcd: EtcdCluster
    etcd_member: int
    log: list[str] = field(default_factory=list)
    #: Intervals the proxy could not answer (frozen, or dead until restarted).
    proxy_down: list[tuple[float, float]] = field(default_factory=list)

    #: The replica names that lead now (broker, watcher), asked of the proxy.
    leaders: Callable[[], Awaitable[set[str]]] | None = None

    def plan(self) -> list[tuple[str, str]]:
        """Every (kind, action) once in a seeded order, then seeded extras."""
        kinds = ["broker", "watcher", "state", "proxy", "etcd"]
        first = [(k, a) for k in kinds for a in ("kill", "stop")]
        self.rng.shuffle(first)
        return first + [(self.rng.choice(kinds), self.rng.choice(["kill", "stop", "stop"]))
                        for _ in range(40)]

    async def _target(self, kind: str) -> Svc:
        if kind == "proxy":
            return self.proxy
        pool = [t for t in self.targets if t.service == {"watcher": "deployments"}.get(kind, kind)]
        if kind in ("broker", "watcher") and self.leaders is not None and self.rng.random() < 0.7:
            try:
                leading = await asyncio.wait_for(self.leaders(), 3)
            except (TimeoutError, grpc.aio.AioRpcError):
                leading = set()
            pool = [t for t in pool if t.name in leading] or pool
        return self.rng.choice(pool)

    async def run(self, seconds: float) -> None:
        t0 = time.monotonic()
        for kind, action in self.plan():
            if time.monotonic() - t0 >= seconds:
                return
            await asyncio.sleep(self.rng.uniform(0.3, 1.0))
            pause = self.rng.uniform(0.5, 3.5)
            at = time.monotonic() - t0
            if kind == "etcd":
                m = self.etcd_member
                self.log.append(f"{at:5.1f}s {action} etcd member {m} for {pause:.1f}s")
                if action == "kill":
                    self.etcd.kill(m)
                    await asyncio.sleep(pause)
                    await asyncio.to_thread(self.etcd.restart, m, 30)
                else:
                    self.etcd.pause(m)
                    await asyncio.sleep(pause)
                    self.etcd.resume(m)
                continue
            svc = await self._target(kind)
            self.log.append(f"{at:5.1f}s {action} {svc.name} for {pause:.1f}s")
            down = time.monotonic()
            if action == "kill":
                svc.kill()
                await asyncio.sleep(pause)
                svc.start()
            else:
                svc.signal(signal.SIGSTOP)
                try:
                    await asyncio.sleep(pause)
                finally:
                    svc.signal(signal.SIGCONT)
            if svc is self.proxy:
                # A restarted proxy needs a moment to listen and learn the servers.
                up = time.monotonic() + (3.0 if action == "kill" else 0.0)
                self.proxy_down.append((down, up))


def overlaps(deliveries: list[Delivery], outcomes: list[Outcome], nack: float) -> list[str]:
    """Pairs of deliveries of one job that were certainly both outstanding.

    A delivery was made somewhere within its Dequeue call [start, end]. An
    earlier delivery ``a`` of the job had certainly not ended when ``b`` was
    made if no Ack/Nack for ``a``'s token was even sent before ``b``'s call
    ended, and ``a``'s nack timeout (counted from the start of its Dequeue,
    the earliest it can have begun) had not expired by then. Under one term
    that is a broker delivering a job twice. Across terms, a failover hands
    out again what the old leader had delivered (the old delivery is fenced
    by its term, so that is allowed) but a delivery under an older term made
    after a newer term's delivery had reached a worker is a deposed leader
    serving: reported too.
    """
    sent: dict[str, float] = {}
    for o in outcomes:
        sent[o.token] = min(sent.get(o.token, o.start), o.start)

    def term(d: Delivery) -> int:
        head = d.token.partition(".")[0]
        return int(head) if head.isdigit() else 0

    out = []
    first_end: dict[int, float] = {}
    for d in deliveries:
        first_end[term(d)] = min(first_end.get(term(d), d.end), d.end)
    for d in deliveries:
        newer = [t for t, end in first_end.items() if t > term(d) and end < d.start]
        if newer:
            out.append(f"{d.eval_id} delivered under term {term(d)} after term {newer[0]} "
                       "had delivered")
    by_job: dict[str, list[Delivery]] = {}
    for d in sorted(deliveries, key=lambda d: d.start):
        by_job.setdefault(d.job_id, []).append(d)
    for job, ds in by_job.items():
        for i, a in enumerate(ds):
            for b in ds[i + 1:]:
                if term(a) != term(b) or b.end <= a.start:
                    continue
                # Either may have been made last within its call (a long
                # poll answers at its end): both were certainly outstanding
                # only if neither could have ended before the other was made.
                if sent.get(a.token, float("inf")) < b.end or b.end >= a.start + nack:
                    continue
                if sent.get(b.token, float("inf")) < a.end or a.end >= b.start + nack:
                    continue
                out.append(f"job {job}: {a.eval_id} ({a.token}, {a.start:.2f}-{a.end:.2f}) and "
                           f"{b.eval_id} ({b.token}, {b.start:.2f}-{b.end:.2f}) both outstanding")
    return out


def too_long(calls: list[Call], proxy_down: list[tuple[float, float]]) -> list[str]:
    out = []
    for c in calls:
        frozen = sum(max(0.0, min(c.end, e) - max(c.start, s)) for s, e in proxy_down)
        allowed = HOLD + SLACK + c.poll_wait + frozen
        if c.end - c.start > allowed:
            out.append(f"{c.method} took {c.end - c.start:.1f}s ({c.code}), allowed {allowed:.1f}s")
    return out




#: Evaluations of other causes that place a deployment's next batch as the
#: watcher's follow-up would: a node marked down for missed heartbeats while
#: the faults cut it off, a failed allocation's reschedule, a drain.
ADVANCING = {"node-update", "alloc-failure", "queued-allocs", "node-drain"}


def advances(e: evaluation_pb2.Evaluation, d: deployment_pb2.Deployment) -> bool:
    """Whether ``e``, made after ``d`` started, could have placed its next
    batch: an evaluation of another cause (:data:`ADVANCING`), or an
    unchanged re-register of the deployment's own version (Nomad's: no new
    version, only a ``job-register`` evaluation, which places what the
    rollout allows next). The load registers a version again when its first
    call failed after landing."""
    if e.namespace != d.namespace or e.job_id != d.job_id or e.create_index <= d.create_index:
        return False
    return e.triggered_by in ADVANCING or (
        e.triggered_by == "job-register" and e.job_modify_index == d.job_modify_index)

@contextlib.asynccontextmanager
async def _tasks(*coros: Coroutine[Any, Any, None]) -> AsyncIterator[list[asyncio.Task[None]]]:
    tasks = [asyncio.create_task(c) for c in coros]
    try:
        yield tasks
    finally:
        # bounded: a load task stuck on its cancel must not hang the test
        await cancel_and_wait(tasks, within=10.0, what="chaos load")


@pytest.mark.slow
async def test_chaos(etcd_cluster3: EtcdCluster, etcd_prefix: str, tmp_path: Path) -> None:
    rng = random.Random(SEED)
    print(f"chaos seed {SEED} (rerun with DROVER_CHAOS_SEED={SEED}); logs in {tmp_path}")
    etcd = etcd_cluster3.endpoint_list
    states = [Svc("state", f"state-{i}", etcd, etcd_prefix, tmp_path) for i in range(2)]
    seeds = ",".join(s.address for s in states)
    brokers = [Svc("broker", f"broker-{i}", etcd, etcd_prefix, tmp_path, "--state-address",
                   seeds, "--broker-nack-timeout", f"{NACK}s") for i in range(2)]
    watchers = [Svc("deployments", f"watcher-{i}", etcd, etcd_prefix, tmp_path,
                    "--state-address", seeds) for i in range(2)]
    proxy = Svc("proxy", "proxy", etcd, etcd_prefix, tmp_path, "--hold-timeout", str(HOLD))
    procs = [*states, *brokers, *watchers, proxy]
    record = Record()
    faults = Faults(rng, [*states, *brokers, *watchers], proxy, etcd_cluster3,
                    etcd_member=rng.randrange(3))
    ch = grpc.aio.insecure_channel(proxy.address, options=channel_options(retries=False),
                                   interceptors=[Recorder(record)])
    try:
        state = state_pb2_grpc.StateServiceStub(ch)
        broker = broker_pb2_grpc.EvalBrokerServiceStub(ch)

        async def broker_up() -> bool:
            r = await broker.GetBrokerStats(broker_pb2.GetBrokerStatsRequest(), timeout=2)
            return bool(r.stats.enabled)

        await until(broker_up, 60, "a broker leader through the proxy")

        async def leaders() -> set[str]:
            resp = await proxy_pb2_grpc.ClientProxyServiceStub(ch).ListServers(
                proxy_pb2.ListServersRequest(), timeout=2)
            return {s.replica for lst in resp.lists for s in lst.servers if s.leader}

        faults.leaders = leaders
        sim = SimNodes(ch, SimConfig(count=4, heartbeat=1.0))
        workers = [Worker(ch, WorkerConfig(batch=4, dequeue_timeout=2.0, seed=SEED + i))
                   for i in range(2)]
        driver = Driver(ch, record, rng)
        deleter = Deleter(ch, record, rng)
        history = History()
        lin = JobClients(history, [f"lin-{i}" for i in range(4)], random.Random(SEED),
                         pause=0.2)
        direct = [grpc.aio.insecure_channel(s.address) for s in states]
        ways = [state, state, *(state_pb2_grpc.StateServiceStub(d) for d in direct)]
        lin_seconds = FAULT_SECONDS + 2
        async with _tasks(sim.run(), *(w.run() for w in workers), Observer(ch, record).run()):
            async with _tasks(driver.run(), deleter.run(),
                              *(lin.run_client(i, way, lin_seconds)
                                for i, way in enumerate(ways))):
                await asyncio.sleep(2)
                await faults.run(FAULT_SECONDS)
            for d in direct:
                await d.close()
            history.close()
            driver.running = False
            # Heal: everything running and awake, a leader known.
            for p in procs:
                p.signal(signal.SIGCONT)
                if p.proc is not None and p.proc.poll() is not None:
                    p.start()
            await asyncio.to_thread(etcd_cluster3.heal)
            await until(broker_up, 60, "a broker leader after healing")

            async def deployments_terminal() -> bool:
                ds = await list_all(state, "ListDeployments", state_pb2.ListDeploymentsRequest(
                    page_size=500), "deployments")
                return all(d.status in TERMINAL_DEPLOYMENT for d in ds)

            await until(deployments_terminal, 60, "every deployment terminal")
        evals = await list_all(state, "ListEvaluations", state_pb2.ListEvaluationsRequest(
            page_size=1000), "evaluations")
        deployments = await list_all(state, "ListDeployments", state_pb2.ListDeploymentsRequest(
            page_size=500), "deployments")
    finally:
        await ch.close()
        for p in procs:
            p.close()

    by_id = {e.id: e for e in evals}
    proxied = [c for c in record.calls]
    acks = [o for o in record.outcomes if o.ok]
    terms = {d.token.partition(".")[0] for d in record.deliveries}
    followed = {e.deployment_id for e in evals if e.triggered_by == "deployment-watcher"}
    succeeded = [d for d in deployments if d.status == deployment_pb2.DEPLOYMENT_STATUS_SUCCESSFUL]
    print(f"faults injected: {len(faults.log)}\n  " + "\n  ".join(faults.log))
    print(f"evaluations: {len(by_id)} (known to the load {len(record.evals)}, "
          f"{sum(e.status in TERMINAL_EVAL for e in evals)} terminal), deleted "
          f"{len(record.deleted)} of {deleter.attempts} tries ({len(record.maybe_deleted)} "
          f"unknown); deliveries "
          f"{len(record.deliveries)} under {len(terms)} "
          f"broker terms, acks/nacks accepted {len(acks)}; jobs registered "
          f"{record.registered}; deployments {len(deployments)} ({len(succeeded)} successful, "
          f"{len(followed)} with the watcher's follow-ups); proxy calls {len(proxied)}, "
          f"max {max((c.end - c.start for c in proxied), default=0):.2f}s")
    problems: list[str] = []
    lost = sorted(record.evals - record.deleted - record.maybe_deleted - set(by_id))
    problems += [f"evaluation {e} vanished" for e in lost]
    problems += [f"deleted evaluation {e} is back ({by_id[e].status})"
                 for e in sorted(record.deleted & set(by_id))]
    problems += overlaps(record.deliveries, record.outcomes, NACK)
    for d in deployments:
        if d.status not in TERMINAL_DEPLOYMENT:
            problems.append(f"deployment {d.id} not terminal")
        if d in succeeded and d.job_version > 0 and d.id not in followed and not any(
                advances(e, d) for e in evals):
            of_job = sorted((e for e in evals if e.job_id == d.job_id),
                            key=lambda e: e.create_index)
            problems.append(
                f"deployment {d.id} (job {d.job_id} v{d.job_version}, indexes "
                f"{d.create_index}-{d.modify_index}, job index {d.job_modify_index}) succeeded "
                "without a follow-up evaluation of the watcher; the job's evaluations: "
                + ", ".join(f"{e.triggered_by}@{e.create_index} (job index "
                            f"{e.job_modify_index})" for e in of_job))
    problems += too_long(proxied, faults.proxy_down)
    linear = check(JOBS, history.ops)
    print(f"job history: {history.counts()} operations on {len(lin.keys)} jobs, "
          f"{linear.explored} search steps: "
          + ("linearizable" if linear.ok else "NOT linearizable"))
    if not linear.ok:
        problems.append("job history not linearizable:\n" + linear.report(JOBS))
    assert not problems, (f"seed {SEED}: {len(problems)} problems (logs in {tmp_path}):\n"
                          + "\n".join(problems[:40]))


def test_the_judges_see_what_they_look_for() -> None:
    """The assertions of test_chaos can fail: each judge on a made-up record."""
    a = Delivery("e1", "job", "5.x", 0.0, 0.1)
    # The same job delivered again under one term, no outcome sent, within
    # the nack timeout: two outstanding deliveries.
    assert overlaps([a, Delivery("e2", "job", "5.y", 1.0, 1.1)], [], nack=8.0)
    # ...not after an Ack was sent, nor once the nack timeout expired...
    assert not overlaps([a, Delivery("e2", "job", "5.y", 1.0, 1.1)],
                        [Outcome("5.x", "e1", 0.5, 0.6, True)], nack=8.0)
    assert not overlaps([a, Delivery("e1", "job", "5.y", 8.5, 8.6)], [], nack=8.0)
    # ...nor when the earlier-started call was a long poll that may have got
    # its evaluation only after the other delivery's Ack was sent.
    poll = Delivery("e1", "job", "5.x", 0.0, 2.0)
    assert not overlaps([poll, Delivery("e2", "job", "5.y", 0.3, 0.3)],
                        [Outcome("5.y", "e2", 0.4, 0.5, True)], nack=8.0)
    assert overlaps([poll, Delivery("e2", "job", "5.y", 0.3, 0.3)], [], nack=8.0)
    # ...nor when a new leader hands it out again (the old delivery is fenced),
    assert not overlaps([a, Delivery("e1", "job", "9.y", 3.0, 3.1)], [], nack=8.0)
    # but a delivery of the old term after the new one delivered is a deposed
    # leader serving.
    assert overlaps([Delivery("e2", "other", "9.z", 1.0, 1.1),
                     Delivery("e1", "job", "5.x", 2.0, 2.1)], [], nack=8.0)
    # A call longer than hold + slack, unless the proxy was down meanwhile or
    # it was a long poll waiting its own time.
    # A deployment's next batch placed by another cause, or by an unchanged
    # re-register of its own version; not by an evaluation made before it,
    # nor by a later version's register.
    d = deployment_pb2.Deployment(namespace="default", job_id="svc-0", create_index=10,
                                  job_modify_index=10)
    def ev(trigger: str, index: int, job_index: int = 10) -> evaluation_pb2.Evaluation:
        return evaluation_pb2.Evaluation(namespace="default", job_id="svc-0",
                                         triggered_by=trigger, create_index=index,
                                         job_modify_index=job_index)
    assert advances(ev("node-update", 12), d) and advances(ev("job-register", 12), d)
    assert not advances(ev("node-update", 9), d) and not advances(ev("job-register", 10), d)
    assert not advances(ev("job-register", 20, job_index=20), d)
    long = Call("GetJob", 0.0, HOLD + SLACK + 1.0, "OK")
    assert too_long([long], [])
    assert not too_long([long], [(0.5, 2.0)])
    assert not too_long([Call("Dequeue", 0.0, HOLD + SLACK + 1.0, "OK", 2.0)], [])
