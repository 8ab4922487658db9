"""Every request is admitted by the server bootstrap before any handler:
undecodable bytes, invalid fields and handler bugs get a clear status, and
no error carries more than a few KiB of the request back."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from drover import errors
from drover.api.broker.v1 import broker_pb2
from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import evaluation_pb2
from drover.config import ServeSettings
from drover.rpc.remote import error_info
from drover.rpc.server import AppContext, DroverServer, ServiceBinding

STATE = "drover.state.v1.StateService"


class _Servicer(state_pb2_grpc.StateServiceServicer):
    def __init__(self) -> None:
        self.calls = 0

    async def GetJob(self, request: Any, context: Any) -> Any:
        self.calls += 1
        if request.id == "bug":
            raise KeyError("a bug")
        # An error that echoes a long value, as a careless handler would.
        raise errors.NotFound("job " + request.namespace * 10 + " not found",
                              metadata={f"k{i}": "v" * 5000 for i in range(40)})


class _App:
    def __init__(self) -> None:
        self.servicer = _Servicer()
        self.bindings = [ServiceBinding(STATE, self.servicer,
                                        state_pb2_grpc.add_StateServiceServicer_to_server)]

    async def prepare(self) -> None:
        return None

    async def start(self, ctx: AppContext) -> None:
        await ctx.health.set_all_ready()

    async def stop(self) -> None:
        return None


@pytest.fixture
async def served() -> AsyncIterator[tuple[_App, grpc.aio.Channel]]:
    app = _App()
    server = DroverServer(ServeSettings(service="state", listen="127.0.0.1:0"), app)
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{server.port}")
    try:
        yield app, channel
    finally:
        await channel.close()
        await server.stop(0)


def _metadata_bytes(err: grpc.aio.AioRpcError) -> int:
    md = err.trailing_metadata() or ()
    return sum(len(k) + len(v if isinstance(v, bytes) else str(v).encode()) for k, v in md) + len(
        (err.details() or "").encode())


async def test_invalid_field_is_refused_before_the_handler(served: Any) -> None:
    app, channel = served
    stub = state_pb2_grpc.StateServiceStub(channel)
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.GetJob(state_pb2.GetJobRequest(id="x" * 1_000_000), timeout=5)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    detail = error_info(info.value)
    assert detail is not None and detail.metadata["field"] == "id"
    assert _metadata_bytes(info.value) < 2048
    assert app.servicer.calls == 0


async def test_undecodable_request_is_invalid_argument(served: Any) -> None:
    app, channel = served
    call = channel.unary_unary(f"/{STATE}/GetJob")
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call(b"\xff\xff\xff\xff", timeout=5)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    # Bytes of another type that happen to parse as this one are the
    # handler's to judge.
    other = broker_pb2.AckRequest(
        status=evaluation_pb2.EVALUATION_STATUS_COMPLETE).SerializeToString()
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call(other, timeout=5)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    assert app.servicer.calls == 1


async def test_long_errors_are_cut_to_a_few_kib(served: Any) -> None:
    _, channel = served
    stub = state_pb2_grpc.StateServiceStub(channel)
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.GetJob(state_pb2.GetJobRequest(id="j", namespace="n" * 128), timeout=5)
    # Without the cut this is ~200 KiB of metadata and the client would see
    # RESOURCE_EXHAUSTED instead of the handler's NOT_FOUND.
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    assert _metadata_bytes(info.value) < 4096
    detail = error_info(info.value)
    assert detail is not None and detail.reason == "NOT_FOUND"


async def test_a_handler_bug_is_internal_without_its_text(served: Any) -> None:
    _, channel = served
    stub = state_pb2_grpc.StateServiceStub(channel)
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.GetJob(state_pb2.GetJobRequest(id="bug"), timeout=5)
    assert info.value.code() == grpc.StatusCode.INTERNAL
    assert "a bug" not in (info.value.details() or "")
