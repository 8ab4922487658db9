"""Broker and deployment-watcher failover under a backlog: SIGTERM, kill -9, SIGSTOP.

A private etcd, one state service and ``--evals`` pending evaluations
(100,000 by default) plus ``--deployments`` running deployments; then, for
each leader-only service, two replicas as ``drover serve`` processes
(session TTL 2 s). Per mode the leader is stopped and the time until the
other replica serves is measured from the signal:

* broker: the first Dequeue that hands out an evaluation;
* watcher: the first PauseDeployment answered.

Modes: SIGTERM (graceful resign), kill -9 (the lease must run out), SIGSTOP
(frozen, not dead: the lease runs out, the other replica takes over; the
frozen one is then woken with SIGCONT and hammered for a second with the
same calls, counting what it still serves: it must be 0). Before each mode
a fresh replica is started and caught up, so both replicas hold the backlog.

    .venv/bin/python bench/leader_failover.py [--evals 100000] [--deployments 50]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parent))

from broker_bench import TTL, dq, enqueue, evals, first_dequeue, spawn, standby_holds

from drover.api.broker.v1 import broker_pb2_grpc
from drover.api.deployments.v1 import deployments_pb2, deployments_pb2_grpc
from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import job_pb2
from drover.dev.etcd import EtcdServer
from drover.dev.ports import free_port, wait_for_port

MODES = (("SIGTERM", signal.SIGTERM), ("kill -9", signal.SIGKILL), ("SIGSTOP", signal.SIGSTOP))


class Replicas:
    """Replicas of one leader-only service, as processes, with their stubs."""

    def __init__(self, service: str, etcd: str, prefix: str, state: str,
                 stub: Callable[[grpc.aio.Channel], object]) -> None:
        self.service, self.etcd, self.prefix, self.state = service, etcd, prefix, state
        self._stub = stub
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.channels: dict[str, grpc.aio.Channel] = {}
        self.stubs: dict[str, object] = {}

    def add(self) -> str:
        port = free_port()
        address = f"127.0.0.1:{port}"
        self.procs[address] = spawn(self.service, self.etcd, self.prefix, port,
                                    "--state-address", self.state)
        assert wait_for_port("127.0.0.1", port, 60)
        self.channels[address] = grpc.aio.insecure_channel(address)
        self.stubs[address] = self._stub(self.channels[address])
        return address

    async def drop(self, address: str) -> None:
        proc = self.procs.pop(address)
        if proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
            proc.kill()
        proc.wait(15)
        self.stubs.pop(address)
        await self.channels.pop(address).close()

    async def close(self) -> None:
        for address in list(self.procs):
            await self.drop(address)


async def leader_among(stubs: dict[str, object],
                       leads: Callable[[object], Awaitable[bool]]) -> str:
    while True:
        for address, stub in stubs.items():
            try:
                if await leads(stub):
                    return address
            except grpc.aio.AioRpcError:
                pass
        await asyncio.sleep(0.05)


async def hammer(call: Callable[[], Awaitable[bool]], seconds: float = 1.0) -> int:
    """How many of ``call`` (True: it was served) succeed within ``seconds``."""
    served = 0
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds

    async def one() -> None:
        nonlocal served
        while loop.time() < end:
            try:
                if await call():
                    served += 1
            except grpc.aio.AioRpcError:
                await asyncio.sleep(0.005)

    await asyncio.gather(*(one() for _ in range(4)))
    return served


async def broker_rounds(etcd: str, prefix: str, state: str, backlog: int) -> list[str]:
    rows = []
    brokers = Replicas("broker", etcd, prefix, state, broker_pb2_grpc.EvalBrokerServiceStub)

    async def leads(stub: object) -> bool:
        from drover.api.broker.v1 import broker_pb2
        resp = await stub.GetBrokerStats(  # type: ignore[attr-defined]
            broker_pb2.GetBrokerStatsRequest(), timeout=2)
        return bool(resp.stats.enabled)

    try:
        brokers.add()
        brokers.add()
        for name, sig in MODES:
            for stub in brokers.stubs.values():
                await standby_holds(stub, backlog)  # type: ignore[arg-type]
            leader = await leader_among(brokers.stubs, leads)
            other = next(a for a in brokers.stubs if a != leader)
            t0 = time.perf_counter()
            os.kill(brokers.procs[leader].pid, sig)
            took = await first_dequeue(brokers.stubs[other], t0)  # type: ignore[arg-type]
            extra = ""
            if sig == signal.SIGSTOP:
                os.kill(brokers.procs[leader].pid, signal.SIGCONT)
                woken = brokers.stubs[leader]

                async def dequeue(woken: object = woken) -> bool:
                    got = await woken.Dequeue(dq(0.0), timeout=5)  # type: ignore[attr-defined]
                    return bool(got.token)

                extra = f"; woken old leader handed out {await hammer(dequeue)} in 1 s"
            rows.append(f"{f'broker, {backlog} pending, {name}':<44} {took * 1e3:>8.0f} ms"
                        f"   (to the first Dequeue on the other replica{extra})")
            print(rows[-1], flush=True)
            await brokers.drop(leader)
            brokers.add()
    finally:
        await brokers.close()
    return rows


def job(i: int) -> job_pb2.Job:
    update = job_pb2.UpdateStrategy(max_parallel=1)
    task = job_pb2.Task(name="server", driver="docker", config={"image": "web:1"})
    group = job_pb2.TaskGroup(name="web", count=3, update=update, tasks=[task])
    return job_pb2.Job(id=f"bench-{i}", namespace="default", type=job_pb2.JOB_TYPE_SERVICE,
                       datacenters=["dc1"], task_groups=[group])


async def watcher_rounds(etcd: str, prefix: str, state: str,
                         state_stub: state_pb2_grpc.StateServiceStub, n: int,
                         backlog: int) -> list[str]:
    rows = []
    deployments = []
    for i in range(n):
        reg = await state_stub.RegisterJob(state_pb2.RegisterJobRequest(job=job(i)), timeout=30)
        deployments.append(reg.deployment_id)
    spare = iter(deployments)
    watchers = Replicas("deployments", etcd, prefix, state,
                        deployments_pb2_grpc.DeploymentWatcherServiceStub)

    async def leads(stub: object) -> bool:
        resp = await stub.GetWatcherStats(  # type: ignore[attr-defined]
            deployments_pb2.GetWatcherStatsRequest(), timeout=2)
        return bool(resp.leader)

    def pause(stub: object, deployment_id: str) -> Awaitable[object]:
        return stub.PauseDeployment(  # type: ignore[attr-defined, no-any-return]
            deployments_pb2.PauseDeploymentRequest(deployment_id=deployment_id, pause=True),
            timeout=5)

    try:
        watchers.add()
        watchers.add()
        for name, sig in MODES:
            leader = await leader_among(watchers.stubs, leads)
            other = next(a for a in watchers.stubs if a != leader)
            target = next(spare)
            t0 = time.perf_counter()
            os.kill(watchers.procs[leader].pid, sig)
            while True:
                try:
                    await pause(watchers.stubs[other], target)
                    break
                except grpc.aio.AioRpcError:
                    await asyncio.sleep(0.005)
            took = time.perf_counter() - t0
            extra = ""
            if sig == signal.SIGSTOP:
                os.kill(watchers.procs[leader].pid, signal.SIGCONT)
                woken, victim = watchers.stubs[leader], next(spare)

                async def steer(woken: object = woken, victim: str = victim) -> bool:
                    await pause(woken, victim)
                    return True

                extra = f"; woken old leader answered {await hammer(steer)} in 1 s"
            rows.append(f"{f'watcher, {n} deployments, {backlog} evals, {name}':<44} "
                        f"{took * 1e3:>8.0f} ms   (to the first PauseDeployment answered by "
                        f"the other replica{extra})")
            print(rows[-1], flush=True)
            await watchers.drop(leader)
            watchers.add()
    finally:
        await watchers.close()
    return rows


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--evals", type=int, default=100_000)
    parser.add_argument("--deployments", type=int, default=50)
    args = parser.parse_args()
    etcd = EtcdServer().start()
    prefix = f"/bench{uuid.uuid4().hex[:8]}/drover"
    sport = free_port()
    state_proc = spawn("state", etcd.endpoint, prefix, sport)
    try:
        assert wait_for_port("127.0.0.1", sport, 60)
        state = f"127.0.0.1:{sport}"
        channel = grpc.aio.insecure_channel(state)
        stub = state_pb2_grpc.StateServiceStub(channel)
        t = time.perf_counter()
        await enqueue(stub, evals("fo", args.evals), batch=120, parallel=4)
        print(f"leader failover (cpus={os.cpu_count()}, session TTL {TTL} s; "
              f"{args.evals} pending evaluations loaded in {time.perf_counter() - t:.0f} s)",
              flush=True)
        await broker_rounds(etcd.endpoint, prefix, state, args.evals)
        await watcher_rounds(etcd.endpoint, prefix, state, stub, args.deployments, args.evals)
        await channel.close()
    finally:
        state_proc.terminate()
        state_proc.wait(15)
        etcd.stop()


if __name__ == "__main__":
    asyncio.run(main())
