"""Heartbeats as lease keepalives and missed heartbeats marked down
(:mod:`drover.state.nodes.liveness`), on :class:`MemoryKV` whose leases run on
the test's virtual clock: a node comes alive with one write, renews with
none, is marked down once its lease expired (never before), and comes back
ready, unblocking blocked evaluations."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from state_harness import state_config_with
from virtual_clock import VirtualClock

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, evaluation_pb2, job_pb2, node_pb2
from drover.coord import Fence
from drover.coord.keys import Keyspace
from drover.coord.kv import Put
from drover.coord.memkv import MemoryKV
from drover.state.app import StateService, build_on_store
from drover.state.config import LivenessConfig
from drover.state.core import codec
from drover.state.nodes.core.liveness import HEARTBEAT_MISSED
from drover.state.nodes.liveness import NodeLiveness

CONFIG = LivenessConfig(min_heartbeat_ttl=10.0, heartbeat_grace=10.0)


@pytest.fixture
async def store(clock: VirtualClock) -> MemoryKV:
    return MemoryKV(clock)


@pytest.fixture
async def service(store: MemoryKV, keyspace: Keyspace) -> AsyncIterator[StateService]:
    svc = await build_on_store(store, keyspace, state_config_with(liveness=CONFIG))
    try:
        yield svc
    finally:
        await svc.close()


def _liveness(svc: StateService) -> NodeLiveness:
    live: NodeLiveness = svc.servicer._node_status.liveness  # type: ignore[attr-defined]
    live._rand = lambda: 0.0  # no stagger: the TTL is exactly the rule's
    return live


async def _fence(svc: StateService, store: MemoryKV) -> Fence:
    key = f"{svc.cache.keys.base}election/broker/test"
    res = await store.txn([], [Put(key.encode(), b"leader")])
    return Fence(key, res.revision)


async def _register(svc: StateService, node_id: str) -> None:
    node = node_pb2.Node(id=node_id, status=node_pb2.NODE_STATUS_READY,
                         scheduling_eligibility=node_pb2.NODE_SCHEDULING_ELIGIBILITY_ELIGIBLE)
    await svc.servicer.UpsertNode(state_pb2.UpsertNodeRequest(node=node), None)


def _get(svc: StateService, kind: str, nsid: str) -> Any:
    obj = svc.cache.tables[kind].decode(nsid)
    assert obj is not None, nsid
    return obj


def _node(svc: StateService, node_id: str) -> Any:
    return _get(svc, codec.NODES, f"{codec.GLOBAL_NS}/{node_id}")


async def test_heartbeats_renew_the_lease_and_write_nothing(
        service: StateService, store: MemoryKV, clock: VirtualClock) -> None:
    live = _liveness(service)
    await _register(service, "n1")
    first = await live.heartbeat("n1")  # comes alive: one write
    assert first.heartbeat_ttl.ToMilliseconds() == 10_000
    assert _node(service, "n1").heartbeat_lease
    rev = await store.revision()
    for _ in range(10):
        clock.advance(9.0)
        resp = await live.heartbeat("n1")
        assert resp.heartbeat_ttl.ToMilliseconds() == 10_000  # told the TTL, not the grace
    assert await store.revision() == rev  # no keyspace write in 90 s of heartbeats
    assert live.keepalives == 10 and live.grants == 1


async def test_a_silent_node_is_marked_down_after_ttl_and_grace_never_before(
        service: StateService, store: MemoryKV, clock: VirtualClock) -> None:
    live = _liveness(service)
    fence = await _fence(service, store)
    for n in ("n1", "n2"):
        await _register(service, n)
        await live.heartbeat(n)
    job = job_pb2.Job(id="web", namespace="default", datacenters=["dc1"],
                      task_groups=[job_pb2.TaskGroup(name="g", count=1)])
    await service.servicer.RegisterJob(state_pb2.RegisterJobRequest(job=job), None)
    await service.servicer.UpsertAllocations(state_pb2.UpsertAllocationsRequest(allocations=[
        allocation_pb2.Allocation(id="a1", namespace="default", job_id=job.id, node_id="n1",
                                  desired_status=allocation_pb2.ALLOC_DESIRED_STATUS_RUN)]),
        None)
    down: dict[str, float] = {}
    for step in range(1, 21):  # 45 s; n2 heartbeats every 9 s, n1 stays silent
        clock.advance(2.25)
        if step % 4 == 0:
            await live.heartbeat("n2")
        for n in (await live.reap(fence)).node_ids:
            down[n] = step * 2.25
    # n1's lease is TTL + grace = 20 s: down at the first check past it, not before
    assert down == {"n1": 20.25}
    n1 = _node(service, "n1")
    assert n1.status_description == HEARTBEAT_MISSED
    assert _node(service, "n2").status == node_pb2.NODE_STATUS_READY
    alloc = _get(service, codec.ALLOCATIONS, "default/a1")
    assert alloc.client_status == allocation_pb2.ALLOC_CLIENT_STATUS_LOST
    evals = [_get(service, codec.EVALUATIONS, nsid)
             for nsid in service.cache.tables[codec.EVALUATIONS].objects]
    assert [e.node_id for e in evals if e.triggered_by == "node-update"] == ["n1"]


async def test_the_reap_marks_down_exactly_at_expiry(
        service: StateService, store: MemoryKV, clock: VirtualClock) -> None:
    live = _liveness(service)
    fence = await _fence(service, store)
    await _register(service, "n1")
    await live.heartbeat("n1")
    clock.advance(19.9)  # the lease is TTL + grace = 20 s
    assert not (await live.reap(fence)).node_ids
    clock.advance(0.2)
    assert list((await live.reap(fence)).node_ids) == ["n1"]


async def test_a_node_that_comes_back_is_ready_and_unblocks(
        service: StateService, store: MemoryKV, clock: VirtualClock) -> None:
    live = _liveness(service)
    fence = await _fence(service, store)
    await _register(service, "n1")
    await live.heartbeat("n1")
    clock.advance(21)
    assert list((await live.reap(fence)).node_ids) == ["n1"]
    blocked = evaluation_pb2.Evaluation(id="b1", namespace="default", type="service",
                                        job_id="web",
                                        status=evaluation_pb2.EVALUATION_STATUS_BLOCKED)
    await service.servicer.UpsertEvaluations(
        state_pb2.UpsertEvaluationsRequest(evaluations=[blocked]), None)
    resp = await live.heartbeat("n1")
    assert resp.unblocked == 1 and resp.heartbeat_ttl.ToMilliseconds() == 10_000
    n1 = _node(service, "n1")
    assert (n1.status, n1.status_description) == (node_pb2.NODE_STATUS_READY, "")
    ev = _get(service, codec.EVALUATIONS, "default/b1")
    assert ev.status == evaluation_pb2.EVALUATION_STATUS_PENDING


async def test_an_operators_down_is_not_undone_by_heartbeats(
        service: StateService, clock: VirtualClock) -> None:
    live = _liveness(service)
    await _register(service, "n1")
    await live.heartbeat("n1")
    await service.servicer.UpdateNodeStatus(state_pb2.UpdateNodeStatusRequest(
        id="n1", status=node_pb2.NODE_STATUS_DOWN), None)
    clock.advance(9)
    await live.heartbeat("n1")
    clock.advance(30)
    await live.heartbeat("n1")  # lease expired meanwhile: renewed by a new one
    assert _node(service, "n1").status == node_pb2.NODE_STATUS_DOWN


async def test_a_lease_from_a_small_cluster_is_replaced_once_it_grew(
        service: StateService, store: MemoryKV, clock: VirtualClock) -> None:
    live = _liveness(service)
    live.config = LivenessConfig(min_heartbeat_ttl=10.0, max_heartbeats_per_second=0.5,
                                 heartbeat_grace=10.0)
    await _register(service, "n0")
    assert (await live.heartbeat("n0")).heartbeat_ttl.ToMilliseconds() == 10_000
    for i in range(1, 12):  # 12 nodes at 0.5/s: a TTL of 24 s
        await _register(service, f"n{i}")
    rev = await store.revision()
    resp = await live.heartbeat("n0")
    assert resp.heartbeat_ttl.ToMilliseconds() == 24_000
    assert await store.revision() > rev and live.grants == 2


async def test_one_call_heartbeats_many_nodes_each_answered_on_its_own(
        service: StateService, store: MemoryKV, clock: VirtualClock) -> None:
    _liveness(service)
    for n in ("n1", "n2"):
        await _register(service, n)
    req = state_pb2.HeartbeatNodesRequest(node_ids=["n1", "nope", "n2"])
    resp = await service.servicer.HeartbeatNodes(req, None)
    assert [b.node_id for b in resp.heartbeats] == ["n1", "nope", "n2"]
    ok, missing, ok2 = resp.heartbeats
    assert ok.heartbeat_ttl.ToMilliseconds() == ok2.heartbeat_ttl.ToMilliseconds() == 10_000
    assert missing.error_reason == "NOT_FOUND" and not missing.HasField("heartbeat_ttl")
    rev = await store.revision()
    clock.advance(9)
    again = await service.servicer.HeartbeatNodes(
        state_pb2.HeartbeatNodesRequest(node_ids=["n1", "n2"]), None)
    assert all(b.heartbeat_ttl.ToMilliseconds() == 10_000 for b in again.heartbeats)
    assert await store.revision() == rev  # renewals only


async def test_a_heartbeat_call_over_the_cap_is_refused(service: StateService) -> None:
    from drover.errors import InvalidArgument
    req = state_pb2.HeartbeatNodesRequest(node_ids=[f"n{i}" for i in range(1001)])
    with pytest.raises(InvalidArgument):
        await service.servicer.HeartbeatNodes(req, None)


async def test_each_node_of_a_heartbeat_call_speaks_only_with_its_own_secret(
        service: StateService) -> None:
    from drover.errors import InvalidArgument
    _liveness(service)
    secrets = {}
    for n in ("n1", "n2"):
        node = node_pb2.Node(id=n, status=node_pb2.NODE_STATUS_READY)
        got = await service.servicer.UpsertNode(state_pb2.UpsertNodeRequest(node=node), None)
        secrets[n] = got.secret_id
    resp = await service.servicer.HeartbeatNodes(state_pb2.HeartbeatNodesRequest(
        node_ids=["n1", "n2"], secret_ids=[secrets["n1"], secrets["n1"]]), None)
    mine, theirs = resp.heartbeats
    assert mine.heartbeat_ttl.ToMilliseconds() == 10_000 and not mine.error_reason
    assert theirs.error_reason == "NODE_SECRET_MISMATCH"
    assert not theirs.HasField("heartbeat_ttl")
    with pytest.raises(InvalidArgument) as err:
        await service.servicer.HeartbeatNodes(state_pb2.HeartbeatNodesRequest(
            node_ids=["n1", "n2"], secret_ids=[secrets["n1"]]), None)
    assert err.value.metadata["field"] == "secret_ids"
