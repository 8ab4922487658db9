"""The broker uses every state replica: it survives losing the one it was given.

Real processes: two state replicas, one broker seeded with the first only
(``--state-address``); it finds the other through membership. The seed is
killed (-9), then, after a third replica has joined, the second one too:
the broker's reads, writes and event stream must each have moved to a live
replica, and every evaluation is delivered and completed.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import grpc
import pytest
from broker_procs import BrokerProc, Proc, leader_among, start_state

from drover.api.broker.v1 import broker_pb2
from drover.api.state.v1 import state_pb2
from drover.api.types.v1.evaluation_pb2 import Evaluation, EvaluationStatus
from drover.config import EtcdSettings
from drover.coord import Keyspace, connect, list_members
from drover.coord.etcd_kv import EtcdKV

PENDING = EvaluationStatus.EVALUATION_STATUS_PENDING
COMPLETE = EvaluationStatus.EVALUATION_STATUS_COMPLETE


def _eval(eval_id: str) -> Evaluation:
    return Evaluation(id=eval_id, namespace="default", priority=50, type="service",
                      job_id=f"job-{eval_id}", status=PENDING, triggered_by="job-register")


async def _work(broker: BrokerProc, ids: set[str], within: float = 30.0) -> None:
    """Dequeue and ack until every one of ``ids`` is acked (a worker retries
    an ack the broker could not write: UNAVAILABLE is safe to retry)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    acked: set[str] = set()
    req = broker_pb2.DequeueRequest(schedulers=["service"])
    req.timeout.FromMilliseconds(1000)
    while not ids <= acked:
        assert loop.time() < deadline, f"acked only {sorted(acked)} of {sorted(ids)}"
        try:
            got = await broker.stub.Dequeue(req, timeout=5)
        except grpc.aio.AioRpcError:
            await asyncio.sleep(0.1)
            continue
        if not got.token:
            continue
        while True:
            try:
                await broker.stub.Ack(broker_pb2.AckRequest(
                    eval_id=got.evaluation.id, token=got.token), timeout=5)
                acked.add(got.evaluation.id)
                break
            except grpc.aio.AioRpcError as err:
                assert err.code() == grpc.StatusCode.UNAVAILABLE, err.details()
                assert loop.time() < deadline, err.details()
                await asyncio.sleep(0.1)


async def _registered(etcd: str, prefix: str, address: str) -> None:
    """Wait until ``address`` is in the state service's membership."""
    client = await connect(EtcdSettings(endpoints=(etcd,)), purpose="control")
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 15
        kv = EtcdKV(client)
        while address not in {m.address for m in
                              (await list_members(kv, Keyspace(prefix), "state")).members}:
            assert loop.time() < deadline, f"{address} never registered"
            await asyncio.sleep(0.05)
    finally:
        await client.close()


@pytest.mark.slow
async def test_the_broker_fails_over_between_state_replicas(
        etcd_endpoint: str, etcd_prefix: str, tmp_path: Path) -> None:
    state0, _ = await start_state(etcd_endpoint, etcd_prefix, tmp_path, "state0")
    state1, stub1 = await start_state(etcd_endpoint, etcd_prefix, tmp_path, "state1")
    procs: list[Proc] = [state0, state1]
    try:
        broker = BrokerProc("broker", etcd_endpoint, etcd_prefix, tmp_path, "broker",
                            "--state-address", state0.address)
        procs.append(broker)
        await leader_among([broker])
        await stub1.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(
            evaluations=[_eval(f"a{i}") for i in range(6)]), timeout=10)
        await _work(broker, {f"a{i}" for i in range(6)})

        state0.signal(signal.SIGKILL)  # the seed, gone
        await stub1.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(
            evaluations=[_eval(f"b{i}") for i in range(6)]), timeout=10)
        await _work(broker, {f"b{i}" for i in range(6)})

        state2, stub2 = await start_state(etcd_endpoint, etcd_prefix, tmp_path, "state2")
        procs.append(state2)
        await _registered(etcd_endpoint, etcd_prefix, state2.address)
        await asyncio.sleep(0.5)  # the broker's membership watch, one round trip behind
        state1.signal(signal.SIGKILL)  # now only the replica it learned of later
        await stub2.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(
            evaluations=[_eval(f"c{i}") for i in range(6)]), timeout=10)
        await _work(broker, {f"c{i}" for i in range(6)})

        for prefix in "abc":
            for i in range(6):
                got = await stub2.GetEvaluation(state_pb2.GetEvaluationRequest(
                    id=f"{prefix}{i}"), timeout=10)
                assert got.evaluation.status == COMPLETE, (prefix, i)
    finally:
        for p in procs:
            await p.close()


HOLD = 1.0


@pytest.mark.slow
async def test_a_frozen_state_replica_holds_a_broker_call_no_longer_than_the_hold(
        etcd_endpoint: str, etcd_prefix: str, tmp_path: Path) -> None:
    """Real processes: two state replicas, a broker using both with
    ``--hold-timeout 1``. Evaluations are dequeued, then one replica is
    frozen (SIGSTOP: its sockets stay open, nothing fails) and the
    evaluations acked: an Ack whose write went to the frozen replica ends
    within about the hold (UNAVAILABLE; the worker retries it, as on any
    UNAVAILABLE) instead of waiting the broker's 10 s call timeout, and
    the retry lands on the live replica."""
    state0, _ = await start_state(etcd_endpoint, etcd_prefix, tmp_path, "state0")
    state1, stub1 = await start_state(etcd_endpoint, etcd_prefix, tmp_path, "state1")
    procs: list[Proc] = [state0, state1]
    try:
        broker = BrokerProc("broker", etcd_endpoint, etcd_prefix, tmp_path, "broker",
                            "--state-address", f"{state0.address},{state1.address}",
                            "--hold-timeout", str(HOLD))
        procs.append(broker)
        await leader_among([broker])
        ids = {f"h{i}" for i in range(6)}
        await stub1.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(
            evaluations=[_eval(i) for i in sorted(ids)]), timeout=10)
        req = broker_pb2.DequeueRequest(schedulers=["service"], max_evaluations=6)
        req.timeout.FromMilliseconds(1000)
        held: dict[str, str] = {}
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 20
        while set(held) != ids:
            assert loop.time() < deadline, f"dequeued only {sorted(held)}"
            got = await broker.stub.Dequeue(req, timeout=5)
            if got.token:
                held[got.evaluation.id] = got.token
            held.update({d.evaluation.id: d.token for d in got.additional})
        state0.signal(signal.SIGSTOP)
        longest, failed = 0.0, 0
        for eval_id, token in sorted(held.items()):
            while True:
                t0 = loop.time()
                try:
                    await broker.stub.Ack(broker_pb2.AckRequest(eval_id=eval_id, token=token),
                                          timeout=10)
                    break
                except grpc.aio.AioRpcError as err:
                    assert err.code() == grpc.StatusCode.UNAVAILABLE, err.details()
                    failed += 1
                    assert loop.time() < deadline + 20, err.details()
                finally:
                    longest = max(longest, loop.time() - t0)
        print(f"acks: longest {longest:.2f}s, {failed} answered UNAVAILABLE and retried")
        assert longest < HOLD + 2.5, f"an Ack waited {longest:.1f}s on the frozen replica"
        for eval_id in ids:
            got = await stub1.GetEvaluation(state_pb2.GetEvaluationRequest(id=eval_id),
                                            timeout=10)
            assert got.evaluation.status == COMPLETE, eval_id
    finally:
        for p in procs:
            await p.close()
