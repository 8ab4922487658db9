"""The state service over three real etcd members: a frozen member costs
no write (one caught in flight on it is answered UNAVAILABLE with reason
OUTCOME_UNKNOWN), and a silent etcd is answered within the client's deadline."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest

from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import scheduler_pb2
from drover.config import EtcdSettings
from drover.coord import EtcdClient, Keyspace, connect
from drover.dev.etcd import EtcdCluster
from drover.rpc.errors import ErrorInterceptor
from drover.rpc.remote import error_info
from drover.state.app import EtcdStore, build_on_store

pytestmark = pytest.mark.slow


@pytest.fixture
async def served(etcd_cluster3: EtcdCluster, keyspace: Keyspace,
                 ) -> AsyncIterator[tuple[state_pb2_grpc.StateServiceStub, EtcdClient]]:
    client = await connect(EtcdSettings(endpoints=etcd_cluster3.endpoints), purpose="bulk")
    service = await build_on_store(EtcdStore(client), keyspace)
    server = grpc.aio.server(interceptors=[ErrorInterceptor()])
    for binding in service.bindings:
        binding.add(binding.servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield state_pb2_grpc.StateServiceStub(channel), client
    finally:
        await channel.close()
        await server.stop(None)
        await service.close()
        await client.close()


def _set(paused: bool) -> state_pb2.SetSchedulerConfigRequest:
    return state_pb2.SetSchedulerConfigRequest(
        config=scheduler_pb2.SchedulerConfig(pause_eval_broker=paused))


async def test_writes_continue_while_the_member_in_use_is_frozen(
        served: tuple[state_pb2_grpc.StateServiceStub, EtcdClient],
        etcd_cluster3: EtcdCluster) -> None:
    stub, client = served
    assert client.pool is not None
    frozen = etcd_cluster3.member_at(client.pool.current.name)
    etcd_cluster3.pause(frozen)
    try:
        ok = unknown = 0
        for i in range(20):
            try:
                await stub.SetSchedulerConfig(_set(i % 2 == 0), timeout=5)
                ok += 1
            except grpc.aio.AioRpcError as e:
                info = error_info(e)
                assert e.code() == grpc.StatusCode.UNAVAILABLE, e
                assert info is not None and info.reason == "OUTCOME_UNKNOWN", e
                unknown += 1
        assert ok >= 19 and unknown <= 1
        got = await stub.GetSchedulerConfig(state_pb2.GetSchedulerConfigRequest(), timeout=5)
        assert got.config.pause_eval_broker is False
    finally:
        etcd_cluster3.resume(frozen)


async def test_etcd_silent_answers_unavailable_before_the_client_deadline(
        served: tuple[state_pb2_grpc.StateServiceStub, EtcdClient],
        etcd_cluster3: EtcdCluster) -> None:
    stub, _ = served
    for i in range(3):
        etcd_cluster3.pause(i)
    try:
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await stub.SetSchedulerConfig(_set(True), timeout=1.5)
        # Not DEADLINE_EXCEEDED: the etcd calls ended inside the client's
        # deadline, and the answer says why: the consistent read before the
        # write failed (ETCD_UNAVAILABLE, safe to retry), or the write was sent
        # and not answered (OUTCOME_UNKNOWN).
        assert e.value.code() == grpc.StatusCode.UNAVAILABLE
        info = error_info(e.value)
        assert info is not None and info.reason in ("ETCD_UNAVAILABLE", "OUTCOME_UNKNOWN")
    finally:
        for i in range(3):
            etcd_cluster3.resume(i)
