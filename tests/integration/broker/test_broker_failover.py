"""Failover with workers: graceful resign and a revoked session.

Workers follow ``drover-leader`` hints like the client proxy does. After a
failover every evaluation still reaches a terminal status (nothing lost),
the old leader's unacked evaluations are deliverable on the new leader at
once, and no replica ever has two evaluations of one job out at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from dataclasses import dataclass, field

import grpc
import pytest
from broker_cluster import BrokerNode, Cluster, dequeue, make_eval
from polling import eventually

from drover.api.broker.v1 import broker_pb2
from drover.api.state.v1 import state_pb2
from drover.broker.config import ShellConfig
from drover.broker.core.record import EvalState
from drover.coord import Keyspace, observe
from drover.rpc.remote import error_info, leader_hint


@dataclass
class Workers:
    cluster: Cluster
    # (replica address, job) -> eval id being processed, per delivering replica.
    in_flight: dict[tuple[str, str], str] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    acked: set[str] = field(default_factory=set)
    hint_follows: int = 0
    stop: bool = False

    def node(self, address: str) -> BrokerNode | None:
        return next((n for n in self.cluster.nodes
                     if not n.stopped and n.address == address), None)

    async def run(self, n: int) -> None:
        await asyncio.gather(*(self._worker(i) for i in range(n)))

    async def _worker(self, i: int) -> None:
        # Workers start spread over the replicas: some must follow hints.
        nodes = itertools.count(i)
        target: BrokerNode | None = None
        while not self.stop:
            live = [n for n in self.cluster.nodes if not n.stopped]
            if target is None or target.stopped:
                target = live[next(nodes) % len(live)]
            try:
                got = await dequeue(target, poll=0.3)
            except grpc.aio.AioRpcError as err:
                hinted = self.node(leader_hint(err) or "")
                if hinted is not None:
                    self.hint_follows += 1
                target = hinted
                if hinted is None:
                    await asyncio.sleep(0.02)
                continue
            if not got.token:
                continue
            key = (target.address, got.evaluation.job_id)
            if key in self.in_flight:
                self.violations.append(f"{key}: {self.in_flight[key]} and {got.evaluation.id}")
            self.in_flight[key] = got.evaluation.id
            await asyncio.sleep(0.005)
            del self.in_flight[key]
            with contextlib.suppress(grpc.aio.AioRpcError):
                await target.stub.Ack(broker_pb2.AckRequest(
                    eval_id=got.evaluation.id, token=got.token), timeout=5)
                self.acked.add(got.evaluation.id)


async def pending_count(cluster: Cluster) -> int:
    resp = await cluster.state_stub.CountEvaluations(state_pb2.CountEvaluationsRequest(
        namespace="*", filter='status == "pending"'))
    return int(resp.count)


async def produce(cluster: Cluster, until: asyncio.Event, ids: list[str]) -> None:
    for i in itertools.count():
        if until.is_set():
            return
        batch = [make_eval(f"e{i:04d}-{k}", job=f"job{(i * 4 + k) % 23}") for k in range(4)]
        await cluster.upsert(*batch)
        ids.extend(e.id for e in batch)
        await asyncio.sleep(0.01)


async def unacked_on(node: BrokerNode) -> set[str]:
    resp = await node.stub.ListQueue(broker_pb2.ListQueueRequest(
        filter='state == "unacked"', page_size=1000))
    return {q.evaluation.id for q in resp.evaluations}


async def run_failover(cluster: Cluster, kill: str) -> None:
    old = await cluster.leader()
    standby = cluster.follower_of(old)

    async def standby_knows_leader() -> bool:
        return standby.app.runtime.leader_address == old.address

    await eventually(standby_knows_leader, what="the standby to observe the leader")
    workers = Workers(cluster)
    done = asyncio.Event()
    ids: list[str] = []
    producer = asyncio.create_task(produce(cluster, done, ids))
    pool = asyncio.create_task(workers.run(4))
    await eventually(lambda: _acked_some(workers, 40), within=8, what="steady state")
    before = await unacked_on(old)
    t0 = time.monotonic()
    if kill == "resign":
        await old.stop()
    else:
        await revoke_leader_lease(cluster, old)
    new = await cluster.leader(within=8, exclude=old)
    took_over = time.monotonic() - t0
    assert new is standby
    # The old leader's unacked evaluations are deliverable on the new one at once.
    states = {i: new.app.core.get(i) for i in before}
    assert all(r is None or r.state in (EvalState.READY, EvalState.UNACKED, EvalState.PENDING)
               for r in states.values()), states
    acked_at_failover = len(workers.acked)
    await eventually(lambda: _acked_some(workers, acked_at_failover + 20), within=5,
                   what="deliveries from the new leader")
    done.set()
    await producer

    async def drained() -> bool:
        return await pending_count(cluster) == 0

    await eventually(drained, within=10, what="every evaluation terminal")
    workers.stop = True
    await pool
    assert workers.violations == []
    assert took_over < 6.0
    assert workers.hint_follows > 0


async def _acked_some(workers: Workers, n: int) -> bool:
    return len(workers.acked) >= n


async def revoke_leader_lease(cluster: Cluster, node: BrokerNode) -> None:
    ctx = node.server.ctx
    assert ctx is not None
    etcd = ctx.etcd
    assert etcd is not None  # a broker's server registers in etcd
    info = await observe(etcd, Keyspace(cluster.prefix), "broker")
    assert info is not None and info.address == node.address
    lease = int(info.leader_key.rsplit("/", 1)[1], 16)
    await etcd.lease_revoke(lease)


async def test_failover_on_graceful_resign_under_load(cluster: Cluster) -> None:
    await run_failover(cluster, "resign")


@pytest.mark.slow
async def test_failover_when_the_leader_session_is_revoked(cluster: Cluster) -> None:
    await run_failover(cluster, "revoke")


async def test_old_leader_token_dies_and_eval_is_redelivered_at_once(cluster: Cluster) -> None:
    old = await cluster.leader()
    await cluster.upsert(make_eval("held", job="solo"))
    got = await dequeue(old)
    assert got.evaluation.id == "held"
    await revoke_leader_lease(cluster, old)
    new = await cluster.leader(within=8, exclude=old)
    again = await dequeue(new, poll=1.0)
    assert again.evaluation.id == "held" and again.token != got.token
    with pytest.raises(grpc.aio.AioRpcError) as late:
        await old.stub.Ack(broker_pb2.AckRequest(eval_id="held", token=got.token))
    assert late.value.code() == grpc.StatusCode.UNAVAILABLE
    assert error_info(late.value).reason == "NOT_LEADER"  # type: ignore[union-attr]
    await new.stub.Ack(broker_pb2.AckRequest(eval_id="held", token=again.token))


# The resigning leader's open polls wait for the next leader to establish (a
# chain of etcd writes, watches and state reads); this test's claim is the
# hint, not how fast a loaded machine gets there: bound the wait generously.
NEXT_LEADER_WITHIN = 15.0


@pytest.mark.parametrize("shell_config", [ShellConfig(hint_wait=NEXT_LEADER_WITHIN)],
                         ids=["hint_wait"])
async def test_open_long_poll_ends_with_the_next_leaders_address(cluster: Cluster) -> None:
    old = await cluster.leader()
    standby = cluster.follower_of(old)
    poll = asyncio.create_task(dequeue(old, poll=NEXT_LEADER_WITHIN + 5))

    async def parked() -> bool:
        return len(old.app.runtime.polls) == 1

    await eventually(parked, what="the long poll to park on the leader")
    # The grace covers resigning (bounded by the revoke timeouts) and the hint wait.
    stopping = asyncio.create_task(old.stop(grace=NEXT_LEADER_WITHIN + 5))
    with pytest.raises(grpc.aio.AioRpcError) as ended:
        await poll
    await stopping
    assert ended.value.code() == grpc.StatusCode.UNAVAILABLE
    assert leader_hint(ended.value) == standby.address


@pytest.mark.parametrize("shell_config", [ShellConfig(hint_wait=NEXT_LEADER_WITHIN)],
                         ids=["hint_wait"])
async def test_a_stop_cut_short_still_ends_open_polls_with_not_leader(cluster: Cluster) -> None:
    """No next leader comes, so the polls' hint wait outlasts the server's
    shutdown grace, which cuts the broker's stop short: the poll still ends
    with the broker's NOT_LEADER, not cancelled later by the server."""
    old = await cluster.leader()
    await cluster.follower_of(old).stop()
    poll = asyncio.create_task(dequeue(old, poll=NEXT_LEADER_WITHIN + 5))

    async def parked() -> bool:
        return len(old.app.runtime.polls) == 1

    await eventually(parked, what="the long poll to park on the leader")
    stopping = asyncio.create_task(old.stop(grace=0.5))
    with pytest.raises(grpc.aio.AioRpcError) as ended:
        await poll
    await stopping
    assert ended.value.code() == grpc.StatusCode.UNAVAILABLE
    assert (info := error_info(ended.value)) is not None and info.reason == "NOT_LEADER"
