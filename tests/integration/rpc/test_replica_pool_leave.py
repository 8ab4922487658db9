"""ReplicaPool over real grpc.aio servers: a replica leaving membership does
not cancel the calls in flight on it (closing its channel at once made them
raise asyncio.CancelledError in the caller, which killed a broker's event
feed: the chaos test found it); its channel is closed once none can remain."""

from __future__ import annotations

import asyncio

import grpc

from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.dev.ports import free_port
from drover.rpc.replicas import ReplicaPool


async def test_a_call_in_flight_outlives_its_replica_leaving_membership() -> None:
    address = f"127.0.0.1:{free_port()}"
    server = grpc.aio.server()

    async def slow(req: state_pb2.ListEvaluationsRequest, ctx: grpc.aio.ServicerContext
                   ) -> state_pb2.ListEvaluationsResponse:
        await asyncio.sleep(0.5)
        return state_pb2.ListEvaluationsResponse(next_page_token="answered")

    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        "drover.state.v1.StateService", {"ListEvaluations": grpc.unary_unary_rpc_method_handler(
            slow, state_pb2.ListEvaluationsRequest.FromString,
            state_pb2.ListEvaluationsResponse.SerializeToString)}),))
    server.add_insecure_port(address)
    await server.start()
    now = [0.0]
    pool = ReplicaPool("state", state_pb2_grpc.StateServiceStub, [address],
                       clock=lambda: now[0])
    try:
        call = asyncio.create_task(pool.read(lambda stub: stub.ListEvaluations(
            state_pb2.ListEvaluationsRequest(), timeout=10)))
        await asyncio.sleep(0.2)
        await pool.set_members(["127.0.0.1:1"])  # membership lists another replica
        resp = await call
        assert resp.next_page_token == "answered"
        assert pool.chooser.addresses == ("127.0.0.1:1",)
        now[0] = 1000.0  # long after: the next change closes the retired channel
        await pool.set_members(["127.0.0.1:2"])
        assert not pool._retired
    finally:
        await pool.close()
        await server.stop(None)
