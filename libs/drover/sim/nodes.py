"""Simulated nodes: the async shell around :mod:`.client`.

One process runs N nodes: it registers them (ready, with resources),
heartbeats each one when the TTL the last answer named has passed (one
schedule for all: :class:`drover.worker.heartbeats.HeartbeatSchedule`; the
heartbeats due together go in one HeartbeatNodes call),
follows the allocations placed on them (one List, then one Subscribe to the
Allocation topic for the whole process, not one per node) and sends what
:func:`.client.step` says is due, batched in UpdateAllocations calls that
carry many nodes' reports each (one txn, filled to the cluster's txn size:
:mod:`.reports`). On a
clean stop the nodes are marked down, so the scheduler replaces what ran on
them (a killed process's nodes are marked down by the control plane once
their TTL and grace pass).

Each node speaks only for itself, as a Nomad client: the secret its
registration returned (``UpsertNodeResponse.secret_id``, kept in memory
and, with ``secrets_file``, on disk, so a restarted process speaks for its
nodes again) goes with its heartbeats, its re-registration and its allocation
updates: a many-node UpdateAllocations call carries each node's group with
that node's secret, as HeartbeatNodes does.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

import grpc

from drover.acl.node_secret import node_secret_metadata
from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import allocation_pb2, job_pb2, node_pb2
from drover.coord.kv import MAX_TXN_OPS, objects_per_txn
from drover.rpc.remote import from_rpc_error, remote_status
from drover.worker.heartbeats import HeartbeatSchedule
from drover.worker.plan_size import written_cap

from . import reports
from .client import Behaviour, Report, Track, behaviour_of, step, wake_at

log = logging.getLogger(__name__)

_TERMINAL = (allocation_pb2.ALLOC_CLIENT_STATUS_COMPLETE, allocation_pb2.ALLOC_CLIENT_STATUS_FAILED,
             allocation_pb2.ALLOC_CLIENT_STATUS_LOST)
#: Registrations and heartbeat calls one process keeps in flight.
CONCURRENT = 64
#: Heartbeats due within this many seconds are sent together, now.
HEARTBEAT_WINDOW = 1.0
#: Nodes per HeartbeatNodes call (the state service takes up to 1,000).
BEATS_PER_CALL = 500


@dataclass(frozen=True)
class SimConfig:
    count: int = 3
    prefix: str = "sim"
    cpu: int = 4000
    memory_mb: int = 8192
    datacenter: str = "dc1"
    #: Seconds between heartbeats when the server's answer names no TTL.
    heartbeat: float = 3.0
    tick: float = 0.1
    #: etcd's --max-txn-ops as the cluster runs it: how many reports one
    #: UpdateAllocations call carries (a state replica that takes fewer
    #: says so, and the calls shrink to it).
    max_txn_ops: int = MAX_TXN_OPS
    #: Stopping waits this long for the cancelled nodes (``drover.tasks``).
    stop_timeout: float = 5.0
    #: Where the nodes' secrets are kept across restarts ("": memory only).
    secrets_file: str = ""


def _brief(err: grpc.RpcError) -> str:
    """A failed call in one line for the log (never the whole AioRpcError)."""
    status = remote_status(err)
    return f"{status.details} ({status.reason or status.code})"


def load_secrets(path: str) -> dict[str, str]:
    """The node secrets a previous run kept in ``path`` (none: empty)."""
    if not path or not os.path.exists(path):
        return {}
    with open(path) as f:
        kept = json.load(f)
    return {str(k): str(v) for k, v in kept.items()} if isinstance(kept, dict) else {}


def save_secrets(path: str, secrets: dict[str, str]) -> None:
    """Keep ``secrets`` in ``path`` (owner-only), written whole or not at all."""
    if not path:
        return
    tmp = f"{path}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(secrets, f)
    os.replace(tmp, path)


class SimNodes:
    def __init__(self, channel: grpc.aio.Channel, config: SimConfig = SimConfig(),
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.stub = state_pb2_grpc.StateServiceStub(channel)
        self.clock = clock
        self.node_ids = [f"{config.prefix}-{i}" for i in range(config.count)]
        self._ours = set(self.node_ids)
        self.tracks: dict[tuple[str, str], Track] = {}
        self._behaviour: dict[tuple[str, str], Behaviour] = {}  # (alloc key) -> behaviour
        self._jobs: dict[tuple[str, str, int], job_pb2.Job] = {}
        #: (namespace, job, version, group) -> its behaviour, derived once.
        self._behaviours: dict[tuple[str, str, int, str], Behaviour] = {}
        #: When each track is next due a step (:func:`.client.wake_at`); a
        #: track absent here waits for its next observation. The heap holds
        #: (when, seq, key) entries, stale ones skipped: a tick steps the due
        #: tracks only, so idle nodes cost nothing per allocation they run.
        self._due_at: dict[tuple[str, str], float] = {}
        self._wakes: list[tuple[float, int, tuple[str, str]]] = []
        self._seq = itertools.count()
        self._node_of: dict[tuple[str, str], str] = {}  # (alloc key) -> its node
        self._job_of: dict[tuple[str, str], tuple[str, str]] = {}  # (alloc key) -> its job
        #: Objects one UpdateAllocations call may write (:mod:`.reports`).
        self.report_room = objects_per_txn(config.max_txn_ops)
        #: Each node's secret, from its registration (absent: not issued to us).
        self.secrets: dict[str, str] = load_secrets(config.secrets_file)
        self.reports = 0
        self.heartbeats = 0
        self.schedule = HeartbeatSchedule(config.heartbeat)

    def _as(self, node_id: str) -> tuple[tuple[str, str], ...]:
        """Metadata presenting ``node_id``'s secret."""
        return node_secret_metadata(self.secrets.get(node_id, ""))

    async def register(self) -> None:
        c = self.config

        async def one(node_id: str) -> None:
            resp = await self.stub.UpsertNode(state_pb2.UpsertNodeRequest(node=node_pb2.Node(
                id=node_id, name=node_id, datacenter=c.datacenter, node_class="sim",
                status=node_pb2.NODE_STATUS_READY,
                scheduling_eligibility=node_pb2.NODE_SCHEDULING_ELIGIBILITY_ELIGIBLE,
                resources=job_pb2.Resources(cpu=c.cpu, memory_mb=c.memory_mb),
                attributes={"driver.sim": "1"})), metadata=self._as(node_id), timeout=30)
            if resp.secret_id:
                self.secrets[node_id] = resp.secret_id
            self.schedule.add(node_id, self.clock())  # its first heartbeat: at once

        for i in range(0, len(self.node_ids), CONCURRENT):
            await asyncio.gather(*(one(n) for n in self.node_ids[i:i + CONCURRENT]))
        save_secrets(c.secrets_file, self.secrets)

    async def mark_down(self) -> None:
        async def one(node_id: str) -> None:
            try:
                await self.stub.UpdateNodeStatus(state_pb2.UpdateNodeStatusRequest(
                    id=node_id, status=node_pb2.NODE_STATUS_DOWN), metadata=self._as(node_id),
                    timeout=10)
            except grpc.RpcError as e:
                log.warning("marking %s down: %s", node_id, _brief(e))

        for i in range(0, len(self.node_ids), CONCURRENT):
            await asyncio.gather(*(one(n) for n in self.node_ids[i:i + CONCURRENT]))

    async def run(self) -> None:
        await self.register()
        tasks = [asyncio.create_task(self._heartbeat()), asyncio.create_task(self._follow()),
                 asyncio.create_task(self._ticks())]
        try:
            await asyncio.gather(*tasks)
        finally:
            for t in tasks:
                t.cancel()

    async def _heartbeat(self) -> None:
        while True:
            now = self.clock()
            # Heartbeats due within the window go now, together: early is
            # safe (the next TTL counts from the answer) and one call carries
            # many nodes, so 10,000 nodes cost about one call a second.
            at = self.schedule.next_at()
            if at is None or at > now:
                await asyncio.sleep(1.0 if at is None else min(at - now, 1.0))
                continue
            due = self.schedule.due(now + HEARTBEAT_WINDOW)
            calls = [due[i:i + BEATS_PER_CALL] for i in range(0, len(due), BEATS_PER_CALL)]
            for i in range(0, len(calls), CONCURRENT):
                await asyncio.gather(*(self.beat(c) for c in calls[i:i + CONCURRENT]))

    async def beat(self, node_ids: list[str]) -> None:
        """One HeartbeatNodes call for ``node_ids``; each node's next heartbeat
        is scheduled by the TTL its answer names."""
        sent = self.clock()
        try:
            # Pure heartbeats: they never undo an operator's down or drain.
            resp = await self.stub.HeartbeatNodes(state_pb2.HeartbeatNodesRequest(
                node_ids=node_ids, secret_ids=[self.secrets.get(n, "") for n in node_ids]
                if any(n in self.secrets for n in node_ids) else []), timeout=30)
        except grpc.RpcError as e:
            log.warning("heartbeats of %d nodes: %s", len(node_ids), _brief(e))
            for node_id in node_ids:
                self.schedule.failed(node_id, self.clock())
            return
        for beat in resp.heartbeats:
            if beat.error_reason:
                log.warning("heartbeat %s: %s: %s", beat.node_id, beat.error_reason,
                            beat.error_message)
                self.schedule.failed(beat.node_id, self.clock())
                continue
            self.heartbeats += 1
            self.schedule.answered(beat.node_id, sent, beat)

    async def _job(self, ns: str, job_id: str, version: int) -> job_pb2.Job:
        key = (ns, job_id, version)
        job = self._jobs.get(key)
        if job is None:
            try:
                resp = await self.stub.GetJob(state_pb2.GetJobRequest(
                    namespace=ns, id=job_id, version=version), timeout=30)
                job = resp.job
            except grpc.RpcError:
                job = job_pb2.Job(id=job_id, namespace=ns)  # purged: default behaviour
            self._jobs[key] = job
        return job

    async def _behaviour_of(self, a: allocation_pb2.Allocation) -> Behaviour:
        key = (a.namespace, a.job_id, a.job_version, a.task_group)
        b = self._behaviours.get(key)
        if b is None:
            job = await self._job(a.namespace, a.job_id, a.job_version)
            b = self._behaviours[key] = behaviour_of(job, a.task_group)
        return b

    def _wake(self, key: tuple[str, str], at: float | None) -> None:
        """Step ``key``'s track at the first tick from ``at`` (None: not
        until it is observed again)."""
        if at is None:
            self._due_at.pop(key, None)
            return
        self._due_at[key] = at
        heapq.heappush(self._wakes, (at, next(self._seq), key))

    async def _observe(self, a: allocation_pb2.Allocation) -> None:
        if a.node_id not in self._ours:
            return
        key = (a.namespace, a.id)
        t = self.tracks.get(key)
        now = self.clock()
        if t is None:
            if a.client_status in _TERMINAL:
                return
            b = await self._behaviour_of(a)
            t = Track(now, bool(a.deployment_id))
            self._behaviour[key] = b
            self.tracks[key] = t
            self._node_of[key] = a.node_id
            self._job_of[key] = (a.namespace, a.job_id)
        elif self._behaviour.get(key) is not None:
            self._behaviour[key] = await self._behaviour_of(a)  # in-place update
        t.observe(a, now)
        self._wake(key, now)  # stepped at the next tick

    async def _follow(self) -> None:
        while True:
            try:
                index = 0
                token = ""
                while True:
                    resp = await self.stub.ListAllocations(state_pb2.ListAllocationsRequest(
                        namespace="*", page_size=1000, page_token=token,
                        filter='desired_status == "run"'), timeout=30)
                    index = index or resp.meta.index
                    for a in resp.allocations:
                        await self._observe(a)
                    token = resp.next_page_token
                    if not token:
                        break
                stream = self.stub.Subscribe(state_pb2.SubscribeRequest(
                    topics=[state_pb2.TOPIC_ALLOCATION], from_index=index))
                async for batch in stream:
                    for ev in batch.events:
                        if ev.HasField("allocation") and ev.type == state_pb2.EVENT_TYPE_UPSERT:
                            await self._observe(ev.allocation)
            except asyncio.CancelledError:
                raise
            except grpc.RpcError as e:
                log.warning("sim nodes: allocation stream: %s; resubscribing", _brief(e))
                await asyncio.sleep(0.5)

    async def _ticks(self) -> None:
        while True:
            await asyncio.sleep(self.config.tick)
            await self.tick()

    def _due(self, now: float) -> list[tuple[str, str]]:
        """The tracks due a step at ``now``, each once, taken off the heap."""
        keys = []
        while self._wakes and self._wakes[0][0] <= now:
            at, _, key = heapq.heappop(self._wakes)
            if self._due_at.get(key) == at:  # else superseded by a later wake
                del self._due_at[key]
                keys.append(key)
        return keys

    async def tick(self) -> None:
        now = self.clock()
        due: dict[str, list[tuple[tuple[str, str], state_pb2.AllocationUpdate]]] = {}
        for key in self._due(now):
            t = self.tracks.get(key)
            if t is None:
                continue
            b = self._behaviour[key]
            r: Report | None = step(t, b, now)
            if r is not None:
                u = state_pb2.AllocationUpdate(namespace=key[0], id=key[1],
                                               client_status=r.client_status,  # type: ignore[arg-type]
                                               client_description=r.description)
                if r.healthy is not None:
                    u.healthy = r.healthy
                due.setdefault(self._node_of[key], []).append((self._job_of[key], u))
            if t.done and r is None:
                self.tracks.pop(key, None)
                self._behaviour.pop(key, None)
                self._node_of.pop(key, None)
                self._job_of.pop(key, None)
            else:
                self._wake(key, wake_at(t, b))
        # Many nodes' reports in one call and one txn (each node's group with
        # its own secret), the calls one after another: per-node calls in
        # flight together would conflict on the job status and summary
        # every report of a job rewrites.
        for call in reports.pack(due, self.report_room):
            await self._send_nodes(call)

    async def _send_nodes(self, call: list[tuple[str, list[state_pb2.AllocationUpdate]]]) -> None:
        if len(call) > 1:
            try:
                await self.stub.UpdateAllocations(state_pb2.UpdateAllocationsRequest(nodes=[
                    state_pb2.NodeAllocationUpdates(node_id=n, secret_id=self.secrets.get(n, ""),
                                                    updates=u) for n, u in call]), timeout=30)
                self.reports += sum(len(u) for _, u in call)
                return
            except grpc.RpcError as e:  # one bad report must not sink the rest
                cap = written_cap(from_rpc_error(e))
                if cap is not None and cap < self.report_room:
                    log.warning("the state service takes writes of at most %d objects; "
                                "reports sized to that", cap)
                    self.report_room = cap
                    return await self._resend(call)
                log.info("reports of %d nodes: %s; node by node", len(call), _brief(e))
        for node_id, updates in call:
            await self._send(node_id, updates)

    async def _resend(self, call: list[tuple[str, list[state_pb2.AllocationUpdate]]]) -> None:
        """``call`` again, packed to the (lowered) room; a report's job is
        its own key here, which only over-counts the job writes."""
        due = {n: [(("", u.id), u) for u in updates] for n, updates in call}
        for part in reports.pack(due, self.report_room):
            await self._send_nodes(part)

    async def _send(self, node_id: str, updates: list[state_pb2.AllocationUpdate]) -> None:
        try:
            await self.stub.UpdateAllocations(state_pb2.UpdateAllocationsRequest(
                updates=updates), metadata=self._as(node_id), timeout=30)
            self.reports += len(updates)
            return
        except grpc.RpcError as e:
            if len(updates) == 1:
                log.warning("report %s: %s", updates[0].id, _brief(e))
                return
        for u in updates:  # one bad (e.g. deleted) allocation must not sink the rest
            await self._send(node_id, [u])
