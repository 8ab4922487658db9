"""The broker's writer with two flushes in flight, against a real state
service on etcd: every write lands once with the outcome its caller is
told, and a fence lost while both flights are under way ends the term
once, with nothing of it written after the loss."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from state_harness import start_state

from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1.evaluation_pb2 import Evaluation, EvaluationStatus
from drover.broker.core.effects import WriteGroup
from drover.broker.state_api import GrpcStateApi
from drover.broker.writer import FencedWriter
from drover.coord.fence import Fence
from drover.coord.keys import Keyspace
from drover.coord.kv import Delete, Put
from drover.errors import DroverError
from drover.rpc.replicas import ReplicaPool

COMPLETE = EvaluationStatus.EVALUATION_STATUS_COMPLETE


class Counting:
    """The state API, counting the writes in flight at once; ``gate`` holds
    them (taken, in flight) until the test opens it."""

    def __init__(self, api: GrpcStateApi) -> None:
        self.api, self.open, self.most = api, 0, 0
        self.two_open = asyncio.Event()
        self.gate = asyncio.Event()
        self.gate.set()

    async def update(self, updates: Sequence[Evaluation], creates: Sequence[Evaluation],
                     fence: Fence) -> int:
        self.open += 1
        self.most = max(self.most, self.open)
        if self.open >= 2:
            self.two_open.set()
        try:
            await self.gate.wait()
            return await self.api.update(updates, creates, fence)
        finally:
            self.open -= 1


async def test_two_flights_land_every_write_and_stop_at_a_lost_fence(
    etcd_endpoint: str, keyspace: Keyspace,
) -> None:
    state = await start_state(etcd_endpoint, keyspace)
    pool = ReplicaPool("state", state_pb2_grpc.StateServiceStub, [state.address])
    try:
        key = f"{state.service.cache.keys.base}election/broker/flights"
        term = (await state.store.txn([], [Put(key.encode(), b"leader")])).revision
        fence = Fence(key, term)
        held: list[Evaluation] = []
        for chunk in range(6):
            evs = [Evaluation(id=f"f{chunk}-{i}", namespace="default", type="service",
                              job_id=f"j{chunk}-{i}",
                              status=EvaluationStatus.EVALUATION_STATUS_BLOCKED)
                   for i in range(100)]
            await state.stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(
                evaluations=evs))
        page = await state.stub.ListEvaluations(state_pb2.ListEvaluationsRequest(
            namespace="*", page_size=1000))
        held = sorted(page.evaluations, key=lambda e: e.id)
        assert len(held) == 600
        api = Counting(GrpcStateApi(pool))
        lost: list[str] = []
        writer = FencedWriter(api, fence, on_written=lambda g, i: None,
                              on_fence_lost=lost.append)
        run = asyncio.create_task(writer.run())

        def acked(ev: Evaluation) -> WriteGroup:
            body = Evaluation()
            body.CopyFrom(ev)
            body.status = COMPLETE
            return WriteGroup((body,))

        # Round 1: 300 acks at once, more than two txns' worth.
        first = await asyncio.gather(*(writer.write(acked(ev)) for ev in held[:300]))
        assert api.most == 2 and all(i > term for i in first)
        # Round 2: the election key goes while two flights are under way.
        api.two_open.clear()
        api.gate.clear()
        writes = [asyncio.ensure_future(writer.write(acked(ev))) for ev in held[300:]]
        await asyncio.wait_for(api.two_open.wait(), 10)
        await state.store.txn([], [Delete(key.encode())])
        api.gate.set()
        outcomes = await asyncio.gather(*writes, return_exceptions=True)
        await asyncio.wait_for(run, 10)
        assert len(lost) == 1 and api.most == 2
        assert all(isinstance(o, DroverError) for o in outcomes)
        page = await state.stub.ListEvaluations(state_pb2.ListEvaluationsRequest(
            namespace="*", page_size=1000))
        now = {e.id: e for e in page.evaluations}
        for ev in held[300:]:  # nothing of the lost term was written
            assert now[ev.id].modify_index == ev.modify_index and now[ev.id].status == 1
        for ev, index in zip(held[:300], first, strict=True):
            assert now[ev.id].status == COMPLETE and now[ev.id].modify_index == index
    finally:
        await pool.close()
        await state.close()
