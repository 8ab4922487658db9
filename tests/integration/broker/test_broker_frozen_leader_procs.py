"""A broker leader frozen past its lease (SIGSTOP) and woken (SIGCONT) serves nothing.

Real `drover serve` processes: one state service, two brokers, session TTL
2 s. The leader holds two deliveries and is frozen; while it is frozen a
worker queues an Ack, a Nack and long-poll Dequeues on it (its sockets stay
open), new evaluations arrive and the other broker takes over and delivers
them to four workers. The old leader is then woken while more evaluations
arrive. Issue #14 saw the woken leader hand out evaluations for 7-31 ms,
answer a queued long poll with an evaluation already given to another
worker, answer the queued Nack OK and the queued Ack without a hint.
"""

from __future__ import annotations

import asyncio
import random
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest
from broker_procs import BrokerProc, leader_among, start_state

from drover.api.broker.v1 import broker_pb2
from drover.api.state.v1 import state_pb2
from drover.api.types.v1.evaluation_pb2 import Evaluation, EvaluationStatus
from drover.rpc.remote import error_info

PENDING = EvaluationStatus.EVALUATION_STATUS_PENDING
COMPLETE = EvaluationStatus.EVALUATION_STATUS_COMPLETE
QUEUED_POLLS = 4
PARKED_POLLS = 4
HAMMERS = 8
WORKERS = 4


def _eval(eval_id: str, scheduler: str = "service") -> Evaluation:
    return Evaluation(id=eval_id, namespace="default", priority=50, type=scheduler,
                      job_id=f"job-{eval_id}", status=PENDING, triggered_by="job-register")


def _dequeue(poll: float, *schedulers: str) -> broker_pb2.DequeueRequest:
    req = broker_pb2.DequeueRequest(schedulers=schedulers or ["service", "batch"])
    req.timeout.FromMilliseconds(int(poll * 1000))
    return req


def _hint(err: grpc.aio.AioRpcError) -> str | None:
    for key, value in err.trailing_metadata() or ():
        if key == "drover-leader":
            return str(value)
    return None


@dataclass
class Delivery:
    eval_id: str
    broker: str
    got_at: float
    done_at: float = float("inf")


@dataclass
class Log:
    deliveries: list[Delivery] = field(default_factory=list)


async def _worker(broker: BrokerProc, log: Log, want: set[str], acked: set[str],
                  rnd: random.Random) -> None:
    while not want <= acked:
        try:
            got = await broker.stub.Dequeue(_dequeue(1.0), timeout=3.0)
        except grpc.aio.AioRpcError:
            await asyncio.sleep(0.05)  # not leading yet
            continue
        if not got.token:
            continue
        d = Delivery(got.evaluation.id, broker.name, time.monotonic())
        log.deliveries.append(d)
        await asyncio.sleep(rnd.uniform(0.0, 0.05))  # "scheduling"
        await broker.stub.Ack(broker_pb2.AckRequest(eval_id=d.eval_id, token=got.token),
                              timeout=5.0)
        d.done_at = time.monotonic()
        acked.add(d.eval_id)


async def _hammer(broker: BrokerProc, until: list[float], got: list[str]) -> None:
    """Workers that keep asking the frozen (then woken) leader, as real ones would."""
    loop = asyncio.get_running_loop()
    while loop.time() < until[0]:
        try:
            resp = await broker.stub.Dequeue(_dequeue(0.0), timeout=30)
        except grpc.aio.AioRpcError:
            await asyncio.sleep(0.005)
            continue
        if resp.token:
            got.append(resp.evaluation.id)


async def _queued(call: object) -> object:
    try:
        return await call  # type: ignore[misc]
    except grpc.aio.AioRpcError as err:
        return err


@pytest.mark.slow
async def test_a_woken_leader_hands_out_nothing_and_points_at_the_new_one(
        etcd_endpoint: str, etcd_prefix: str, tmp_path: Path) -> None:
    rnd = random.Random(1414)
    state, state_stub = await start_state(etcd_endpoint, etcd_prefix, tmp_path)
    brokers = [BrokerProc("broker", etcd_endpoint, etcd_prefix, tmp_path, f"broker{i}",
                          "--state-address", state.address) for i in range(2)]
    workers: list[asyncio.Task[None]] = []
    try:
        old = await leader_among(brokers)
        new = next(b for b in brokers if b is not old)
        await state_stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(
            evaluations=[_eval("held-ack"), _eval("held-nack")]), timeout=10)
        held = {}
        for _ in range(2):
            got = await old.stub.Dequeue(_dequeue(5.0), timeout=10)
            held[got.evaluation.id] = got
        assert set(held) == {"held-ack", "held-nack"}
        # Ready in the leader's memory when it freezes ...
        ready = [f"ready{i}" for i in range(8)]
        await state_stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(
            evaluations=[_eval(e) for e in ready]), timeout=10)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while (await old.stub.GetBrokerStats(broker_pb2.GetBrokerStatsRequest(),
                                             timeout=5)).stats.total_ready < len(ready):
            assert loop.time() < deadline
            await asyncio.sleep(0.02)
        # ... and long polls parked on it (nothing of their type is ready).
        parked = [asyncio.ensure_future(_queued(old.stub.Dequeue(
            _dequeue(20.0, "batch"), timeout=40))) for _ in range(PARKED_POLLS)]
        await asyncio.sleep(0.3)

        old.signal(signal.SIGSTOP)
        stopped_at = time.monotonic()
        # Queued on the frozen leader: they are read when it wakes.
        ack = asyncio.ensure_future(_queued(old.stub.Ack(broker_pb2.AckRequest(
            eval_id="held-ack", token=held["held-ack"].token), timeout=30)))
        nack = asyncio.ensure_future(_queued(old.stub.Nack(broker_pb2.NackRequest(
            eval_id="held-nack", token=held["held-nack"].token), timeout=30)))
        polls = [asyncio.ensure_future(_queued(old.stub.Dequeue(_dequeue(10.0), timeout=30)))
                 for _ in range(QUEUED_POLLS)]
        hammer_until, from_old = [float("inf")], list[str]()
        hammers = [asyncio.create_task(_hammer(old, hammer_until, from_old))
                   for _ in range(HAMMERS)]
        during = [f"during{i}" for i in range(8)]
        after = [f"after{i}" for i in range(8)]
        want = set(during) | set(after) | set(held) | set(ready)
        await state_stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(
            evaluations=[_eval(e, "batch") for e in during]), timeout=10)
        log, acked = Log(), set[str]()
        workers = [asyncio.create_task(_worker(new, log, want, acked, random.Random(i)))
                   for i in range(WORKERS)]
        deadline = loop.time() + 30
        while not await new.enabled():
            assert loop.time() < deadline, f"no new leader (logs in {tmp_path})"
            await asyncio.sleep(0.05)
        await asyncio.sleep(rnd.uniform(0.2, 1.0))

        old.signal(signal.SIGCONT)
        woken_at = time.monotonic()
        hammer_until[0] = loop.time() + 0.5
        await state_stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(
            evaluations=[_eval(e, "batch") for e in after]), timeout=10)
        await asyncio.wait_for(asyncio.gather(*hammers), 40)
        results = await asyncio.wait_for(asyncio.gather(ack, nack, *polls, *parked), 40)
        fresh = await _queued(old.stub.Dequeue(_dequeue(0.5), timeout=10))
        await asyncio.wait_for(asyncio.gather(*workers), 40)
    finally:
        for w in workers:
            w.cancel()
        for p in [*brokers, state]:
            await p.close()

    assert from_old == [], f"the woken leader handed out {from_old}"
    # The queued Ack and Nack were refused (not OK) and point at the new leader.
    for name, res in zip(("ack", "nack"), results[:2], strict=True):
        assert isinstance(res, grpc.aio.AioRpcError), f"queued {name} answered {res!r}"
        assert res.code() == grpc.StatusCode.UNAVAILABLE, (name, res.details())
        info = error_info(res)
        assert info is not None and info.reason == "NOT_LEADER", (name, info)
        assert _hint(res) == new.address, (name, res.details())
    # No long poll (parked before the freeze or queued during it), and no
    # fresh call, got an evaluation from the old leader.
    for res in [*results[2:], fresh]:
        if isinstance(res, grpc.aio.AioRpcError):
            assert res.code() == grpc.StatusCode.UNAVAILABLE, res.details()
            assert _hint(res) == new.address, res.details()
        else:
            assert not res.token, f"the woken leader handed out {res.evaluation.id}"  # type: ignore[attr-defined]
    # Everything was delivered by the new leader, once each (the refused Ack
    # left held-ack pending, the refused Nack left held-nack to redeliver),
    # and no two deliveries of one job overlapped.
    assert {d.eval_id for d in log.deliveries} == want
    assert all(d.broker == new.name for d in log.deliveries)
    by_eval: dict[str, list[Delivery]] = {}
    for d in log.deliveries:
        by_eval.setdefault(d.eval_id, []).append(d)
    assert all(len(ds) == 1 for ds in by_eval.values()), by_eval
    assert stopped_at < woken_at
