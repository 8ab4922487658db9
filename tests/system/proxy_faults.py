"""A proxy in front of two state replicas, all `drover serve` processes, and
what the proxy does when the replica it uses is frozen (SIGSTOP).

Shared by tests/system/test_proxy_faults.py (asserts outcomes) and
bench/proxy_bench.py ``--faults`` (reports the times). Times here are
measurements, never assertions.

The scenario, with the proxy's in-use state replica ``A`` and the other ``B``:

1. a Subscribe stream (jobs) through the proxy, and a few jobs registered
   through it; the stream delivers them (from A);
2. A is frozen; at once, through the proxy: a GetJob and a RegisterJob (both
   go to A, which the proxy does not yet know is frozen), and directly on B
   a RegisterJob whose event the stream must deliver once resumed on B;
3. more jobs through the proxy (now on B); then A is woken.

Outcomes: the read's status and time to answer, the write's status, ErrorInfo
reason and time to answer, the resume gap (from the direct write on B being
committed to its event arriving through the proxy stream), and the stream's
events compared with a direct Subscribe on B over the same index range.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc

from drover.api.proxy.v1 import proxy_pb2, proxy_pb2_grpc
from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import job_pb2
from drover.dev.ports import free_port, wait_for_port
from drover.rpc.remote import error_info
from drover.tasks import cancel_and_wait

#: Events compared: (index, type, key).
Event = tuple[int, int, str]


@dataclass
class Proc:
    service: str
    address: str
    proc: subprocess.Popen[bytes]

    def signal(self, sig: int) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)

    def stop(self) -> None:
        self.signal(signal.SIGCONT)  # a frozen process cannot act on SIGTERM
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


@contextlib.contextmanager
def serve(service: str, etcd: str, prefix: str, *extra: str) -> Iterator[Proc]:
    port = free_port()
    proc = subprocess.Popen([
        sys.executable, "-m", "drover.cli.main", "serve", service, "--etcd", etcd,
        "--etcd-prefix", prefix, "--listen", f"127.0.0.1:{port}", "--session-ttl", "3",
        "--log-level", "ERROR", *extra,
    ])
    p = Proc(service, f"127.0.0.1:{port}", proc)
    try:
        if not wait_for_port("127.0.0.1", port, 30):
            raise RuntimeError(f"{service} did not start")
        yield p
    finally:
        p.stop()


@dataclass
class Cluster:
    states: tuple[Proc, Proc]
    proxy: Proc
    hold: float


@contextlib.contextmanager
def cluster(etcd: str, prefix: str, hold: float) -> Iterator[Cluster]:
    with serve("state", etcd, prefix) as s1, serve("state", etcd, prefix) as s2, \
            serve("proxy", etcd, prefix, "--hold-timeout", str(hold)) as proxy:
        yield Cluster((s1, s2), proxy, hold)


def job(jid: str) -> job_pb2.Job:
    return job_pb2.Job(id=jid, datacenters=["dc1"],
                       task_groups=[job_pb2.TaskGroup(name="g", count=1)])


async def state_front(channel: grpc.aio.Channel, want: int = 2, within: float = 30.0) -> str:
    """The state server the proxy uses, once it lists ``want`` of them."""
    stub = proxy_pb2_grpc.ClientProxyServiceStub(channel)
    deadline = time.monotonic() + within
    while True:
        resp = await stub.ListServers(proxy_pb2.ListServersRequest(service="state"), timeout=5)
        servers = [s.address for s in resp.lists[0].servers] if resp.lists else []
        if len(servers) >= want:
            return servers[0]
        if time.monotonic() > deadline:
            raise TimeoutError(f"the proxy lists {servers}, not {want} state servers")
        await asyncio.sleep(0.1)


@dataclass
class Stream:
    """Everything a Subscribe stream through the proxy delivered."""

    events: list[Event] = field(default_factory=list)
    #: Index of every response, heartbeats included, in arrival order.
    indexes: list[int] = field(default_factory=list)
    #: Key -> monotonic time its first event arrived.
    arrived: dict[str, float] = field(default_factory=dict)
    error: BaseException | None = None
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self, call: Any) -> None:
        try:
            async for resp in call:
                self.indexes.append(resp.index)
                for ev in resp.events:
                    self.events.append((ev.index, int(ev.type), ev.key))
                    self.arrived.setdefault(ev.key, time.monotonic())
                self.changed.set()
        except BaseException as e:  # reported to the caller
            self.error = e
            self.changed.set()

    async def wait_for(self, key: str, within: float) -> float:
        deadline = time.monotonic() + within
        while key not in self.arrived:
            if self.error is not None:
                raise RuntimeError(f"the stream ended: {self.error!r}")
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no event for {key} within {within}s")
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), left)
        return self.arrived[key]


@dataclass(frozen=True)
class Outcome:
    """One run of the scenario."""

    hold: float
    read_code: str
    read_seconds: float
    write_code: str
    write_reason: str
    write_seconds: float
    resume_gap_seconds: float
    #: Events through the proxy and directly from B over the same index range.
    proxied: tuple[Event, ...]
    direct: tuple[Event, ...]
    indexes: tuple[int, ...]
    stream_error: str


async def _timed(coro: Any) -> tuple[str, str, float, Any]:
    t0 = time.monotonic()
    try:
        result = await coro
    except grpc.aio.AioRpcError as err:
        info = error_info(err)
        return err.code().name, info.reason if info else "", time.monotonic() - t0, None
    return "OK", "", time.monotonic() - t0, result


async def _direct_events(address: str, after: int, through: int) -> list[Event]:
    """Events with index in (after, through], read straight from one replica."""
    out: list[Event] = []
    async with grpc.aio.insecure_channel(address) as ch:
        call = state_pb2_grpc.StateServiceStub(ch).Subscribe(
            state_pb2.SubscribeRequest(topics=[state_pb2.TOPIC_JOB], from_index=after),
            timeout=30,
        )
        async for resp in call:
            out += [(e.index, int(e.type), e.key) for e in resp.events if e.index <= through]
            if resp.index >= through:
                break
        call.cancel()
    return out


@contextlib.asynccontextmanager
async def _channel(address: str) -> AsyncIterator[grpc.aio.Channel]:
    ch = grpc.aio.insecure_channel(address)
    try:
        yield ch
    finally:
        await ch.close()


async def long_poll_outlives_the_hold(c: Cluster, *, tag: str = "") -> tuple[str, float, int]:
    """A blocking GetJob (max_wait = 3 x hold) through the proxy on live
    replicas, woken by a write after 2 x hold: (status, seconds, index seen).
    The hold bounds silence, not call length: the live server answers pings."""
    async with _channel(c.proxy.address) as ch:
        await state_front(ch)
        stub = state_pb2_grpc.StateServiceStub(ch)
        jid = f"{tag}poll"
        first = await stub.RegisterJob(state_pb2.RegisterJobRequest(job=job(jid)), timeout=10)
        request = state_pb2.GetJobRequest(id=jid)
        request.query.min_index = first.index
        request.query.max_wait.FromMilliseconds(int(3000 * c.hold))
        poll = asyncio.create_task(_timed(stub.GetJob(request, timeout=60)))
        await asyncio.sleep(2 * c.hold)
        changed = job(jid)
        changed.priority = 70
        await stub.RegisterJob(state_pb2.RegisterJobRequest(job=changed), timeout=10)
        code, _, seconds, resp = await poll
        return code, seconds, resp.job.priority if resp is not None else 0


async def freeze_the_used_replica(c: Cluster, *, tag: str = "") -> Outcome:
    """The scenario of the module docstring; the frozen replica is woken at the end."""
    async with _channel(c.proxy.address) as ch:
        front = await state_front(ch)
        frozen = next(s for s in c.states if s.address == front)
        other = next(s for s in c.states if s.address != front)
        stub = state_pb2_grpc.StateServiceStub(ch)
        stream = Stream()
        call = stub.Subscribe(state_pb2.SubscribeRequest(topics=[state_pb2.TOPIC_JOB]))
        reader = asyncio.create_task(stream.run(call))
        try:
            for i in range(3):
                await stub.RegisterJob(state_pb2.RegisterJobRequest(job=job(f"{tag}pre{i}")),
                                       timeout=10)
            await stream.wait_for(f"{tag}pre2", 10)

            frozen.signal(signal.SIGSTOP)
            try:
                async with _channel(other.address) as direct:
                    # Deadlines far beyond the hold: answers must come from the hold.
                    read = asyncio.create_task(_timed(stub.GetJob(
                        state_pb2.GetJobRequest(id=f"{tag}pre0"), timeout=60)))
                    write = asyncio.create_task(_timed(stub.RegisterJob(
                        state_pb2.RegisterJobRequest(job=job(f"{tag}frozen")), timeout=60)))
                    committed_at = time.monotonic()
                    await state_pb2_grpc.StateServiceStub(direct).RegisterJob(
                        state_pb2.RegisterJobRequest(job=job(f"{tag}direct")), timeout=10)
                    committed_at = (committed_at + time.monotonic()) / 2
                    read_code, _, read_s, _ = await read
                    write_code, write_reason, write_s, _ = await write
                    gap = await stream.wait_for(f"{tag}direct", 60) - committed_at
                    for i in range(2):
                        await stub.RegisterJob(
                            state_pb2.RegisterJobRequest(job=job(f"{tag}post{i}")), timeout=10)
                    await stream.wait_for(f"{tag}post1", 10)
            finally:
                frozen.signal(signal.SIGCONT)
        finally:
            call.cancel()
            await cancel_and_wait((reader,), within=10.0, what="subscribe reader")
    first, last = stream.indexes[0], max(stream.indexes)
    direct_events = await _direct_events(other.address, first, last)
    return Outcome(
        hold=c.hold, read_code=read_code, read_seconds=read_s, write_code=write_code,
        write_reason=write_reason, write_seconds=write_s, resume_gap_seconds=gap,
        proxied=tuple(stream.events), direct=tuple(direct_events),
        indexes=tuple(stream.indexes),
        stream_error="" if stream.error is None or isinstance(
            stream.error, asyncio.CancelledError) else repr(stream.error),
    )
