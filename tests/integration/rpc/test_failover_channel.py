"""Several addresses on one client channel (``--address a,b``): real grpc.aio
servers on loopback. A read that a server answers UNAVAILABLE goes on to the
next address; a write it was sent is never repeated (its outcome is
unknown); an address that refuses connections is skipped before anything is
sent, for writes too; the order is random."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator

import grpc
import pytest

from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import job_pb2
from drover.dev.ports import free_port
from drover.rpc.failover import FailoverChannel, client_channel, split_addresses


class Server:
    """Answers GetJob and RegisterJob: OK, or UNAVAILABLE when ``down``."""

    def __init__(self, name: str, down: bool) -> None:
        self.name, self.down = name, down
        self.calls: list[str] = []
        self.address = f"127.0.0.1:{free_port()}"
        self.server = grpc.aio.server()

        async def get_job(req: state_pb2.GetJobRequest, ctx: grpc.aio.ServicerContext
                          ) -> state_pb2.GetJobResponse:
            self.calls.append("GetJob")
            if self.down:
                await ctx.abort(grpc.StatusCode.UNAVAILABLE, "shutting down")
            return state_pb2.GetJobResponse(job=job_pb2.Job(id=req.id, name=self.name))

        async def register(req: state_pb2.RegisterJobRequest, ctx: grpc.aio.ServicerContext
                           ) -> state_pb2.RegisterJobResponse:
            self.calls.append("RegisterJob")
            if self.down:
                await ctx.abort(grpc.StatusCode.UNAVAILABLE, "shutting down")
            return state_pb2.RegisterJobResponse(eval_id=self.name)

        handlers = {
            "GetJob": grpc.unary_unary_rpc_method_handler(
                get_job, state_pb2.GetJobRequest.FromString,
                state_pb2.GetJobResponse.SerializeToString),
            "RegisterJob": grpc.unary_unary_rpc_method_handler(
                register, state_pb2.RegisterJobRequest.FromString,
                state_pb2.RegisterJobResponse.SerializeToString),
        }
        self.server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
            "drover.state.v1.StateService", handlers),))
        self.server.add_insecure_port(self.address)


@pytest.fixture
async def servers() -> AsyncIterator[tuple[Server, Server]]:
    down, up = Server("down", True), Server("up", False)
    for s in (down, up):
        await s.server.start()
    yield down, up
    for s in (down, up):
        await s.server.stop(None)


def test_addresses() -> None:
    assert split_addresses(" a:1, b:2,,a:1 ") == ["a:1", "b:2"]


async def test_a_read_fails_over_a_write_is_sent_once(servers: tuple[Server, Server]) -> None:
    down, up = servers
    async with FailoverChannel([down.address, up.address]) as ch:
        ch.order = [down.address, up.address]  # the order is random: fix it
        stub = state_pb2_grpc.StateServiceStub(ch)
        got = await stub.GetJob(state_pb2.GetJobRequest(id="j"), timeout=10)
        assert got.job.name == "up"
        # (each address's channel retries a read a few times itself)
        assert set(down.calls) == {"GetJob"} and up.calls == ["GetJob"]
        down.calls.clear()
        # The failed address went to the back: the next call starts on ``up``.
        assert ch.order == [up.address, down.address]
        ch.order = [down.address, up.address]
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.RegisterJob(state_pb2.RegisterJobRequest(job=job_pb2.Job(id="j")),
                                   timeout=10)
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE
        assert down.calls == ["RegisterJob"] and up.calls == ["GetJob"]


async def test_an_address_that_refuses_connections_is_skipped_for_writes_too(
        servers: tuple[Server, Server]) -> None:
    _, up = servers
    dead = f"127.0.0.1:{free_port()}"
    async with FailoverChannel([dead, up.address]) as ch:
        ch.order = [dead, up.address]
        stub = state_pb2_grpc.StateServiceStub(ch)
        resp = await stub.RegisterJob(state_pb2.RegisterJobRequest(job=job_pb2.Job(id="j")),
                                      timeout=10)
        assert resp.eval_id == "up" and up.calls == ["RegisterJob"]
        assert ch.order == [up.address, dead]


async def test_the_order_is_random_and_one_address_gets_the_hold_too() -> None:
    addresses = [f"127.0.0.1:{p}" for p in range(9001, 9006)]
    orders = set()
    for seed in range(10):
        ch = FailoverChannel(addresses, rng=random.Random(seed))
        orders.add(tuple(ch.order))
        await ch.close()
    assert len(orders) > 1
    one = client_channel("127.0.0.1:9001")
    assert isinstance(one, FailoverChannel) and one.order == ["127.0.0.1:9001"]
    await one.close()
    many = client_channel("127.0.0.1:9001,127.0.0.1:9002")
    assert isinstance(many, FailoverChannel)
    await many.close()


async def test_a_silent_server_is_left_within_the_hold() -> None:
    """A server that accepts calls and never answers them, nor the hold's
    health ping (what a frozen process looks like): a read moves on to the
    next address and a write ends UNAVAILABLE OUTCOME_UNKNOWN, both within
    about the hold, not the call's timeout."""
    import asyncio
    import time

    from drover.rpc.remote import error_info

    async def hang(req: bytes, ctx: grpc.aio.ServicerContext) -> bytes:
        await asyncio.sleep(60)
        return b""

    silent = grpc.aio.server()
    silent.add_generic_rpc_handlers((
        grpc.method_handlers_generic_handler("drover.state.v1.StateService", {
            "GetJob": grpc.unary_unary_rpc_method_handler(hang),
            "RegisterJob": grpc.unary_unary_rpc_method_handler(hang)}),
        grpc.method_handlers_generic_handler("grpc.health.v1.Health", {
            "Check": grpc.unary_unary_rpc_method_handler(hang)}),
    ))
    address = f"127.0.0.1:{free_port()}"
    silent.add_insecure_port(address)
    up = Server("up", False)
    await silent.start()
    await up.server.start()
    try:
        async with FailoverChannel([address, up.address], hold=0.5) as ch:
            stub = state_pb2_grpc.StateServiceStub(ch)
            ch.order = [address, up.address]
            t0 = time.monotonic()
            got = await stub.GetJob(state_pb2.GetJobRequest(id="j"), timeout=20)
            assert got.job.name == "up" and time.monotonic() - t0 < 2.0
            ch.order = [address, up.address]
            t0 = time.monotonic()
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await stub.RegisterJob(state_pb2.RegisterJobRequest(), timeout=20)
            assert time.monotonic() - t0 < 2.0
            info = error_info(err.value)
            assert err.value.code() == grpc.StatusCode.UNAVAILABLE
            assert info is not None and info.reason == "OUTCOME_UNKNOWN"
            assert up.calls == ["GetJob"]  # the write was not repeated elsewhere
    finally:
        await silent.stop(None)
        await up.server.stop(None)
