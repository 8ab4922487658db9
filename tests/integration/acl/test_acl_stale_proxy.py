"""Through the proxy, a state replica whose ACL data went stale costs nothing:
its ACL_DATA_STALE refusal comes before any handler runs, so the proxy sends
even a write to the other replica, and rotates the stale one to the back.

Real etcd, two state replicas, broker, watcher and proxy (in process); the
stale replica is made so as in ``test_acl_stale.py``: its ACL watch consumer
stops, then the ACL prefix changes (a token is created), so the replica can
no longer prove its view current."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import grpc
import pytest
from acl_cluster import ACL, STATE, Cluster, call, start_cluster, until_code

from drover.api.acl.v1 import acl_pb2
from drover.api.state.v1 import state_pb2
from drover.api.types.v1.evaluation_pb2 import Evaluation, EvaluationStatus
from drover.config import AclSettings
from drover.proxy.app import ProxyApp

pytestmark = pytest.mark.slow

MAX_STALE = 1.5
BOUND = 20.0  # longest any one wait may take, on a loaded machine


@pytest.fixture
async def cluster(etcd_endpoint: str) -> AsyncIterator[Cluster]:
    c = await start_cluster(etcd_endpoint, f"/t{uuid.uuid4().hex[:12]}/drover",
                            state_acl=AclSettings(max_stale=MAX_STALE))
    try:
        yield c
    finally:
        await c.close()


def _eval(i: int) -> Evaluation:
    return Evaluation(id=f"stale-proxy-{i}", namespace="default", priority=50, type="service",
                      job_id=f"job-{i}", status=EvaluationStatus.EVALUATION_STATUS_PENDING)


async def test_a_write_refused_for_stale_acl_data_is_served_by_the_other_replica(
        cluster: Cluster) -> None:
    proxy, stale = cluster.channel("proxy"), cluster.channel("state-1")
    try:
        code, _, boot = await call(proxy, ACL + "Bootstrap")
        assert code == grpc.StatusCode.OK, boot
        mgmt = boot.secret_id
        for name in ("state-1", "state-2"):  # both replicas know the token
            ch = cluster.channel(name)
            try:
                got = await until_code(ch, mgmt, grpc.StatusCode.OK, within=BOUND)
                assert got[0] == grpc.StatusCode.OK, got
            finally:
                await ch.close()
        # state-1's ACL view stalls behind a change it will never see.
        acl = cluster.servers["state-1"].acl
        assert acl is not None and acl.cache._task is not None
        acl.cache._task.cancel()
        await asyncio.gather(acl.cache._task, return_exceptions=True)
        code, _, made = await call(proxy, ACL + "CreateToken", acl_pb2.CreateTokenRequest(
            name="later", type=acl_pb2.TOKEN_TYPE_MANAGEMENT), secret=mgmt)
        assert code == grpc.StatusCode.OK, made
        code, reason, details = await until_code(stale, mgmt, grpc.StatusCode.UNAVAILABLE,
                                                 within=BOUND)
        assert (code, reason) == (grpc.StatusCode.UNAVAILABLE, "ACL_DATA_STALE"), details
        # The proxy's next state call goes to state-1 first (state-2 rotated back).
        app = cluster.servers["proxy"].app
        assert isinstance(app, ProxyApp)
        servers = app.lists.get("state")
        front = servers.servers[0]
        if front.address != cluster.address("state-1"):
            servers.notify_failed(front)
        assert servers.servers[0].address == cluster.address("state-1")
        retried = sum(n for (svc, _), n in app.forwarder.retries.items() if svc == "state")
        code, _, resp = await call(proxy, STATE + "UpsertEvaluations",
                                   state_pb2.UpsertEvaluationsRequest(evaluations=[_eval(0)]),
                                   secret=mgmt)
        assert code == grpc.StatusCode.OK, resp
        assert sum(n for (svc, _), n in app.forwarder.retries.items()
                   if svc == "state") == retried + 1
        # The stale replica went to the back: the next writes go straight to state-2.
        assert servers.servers[0].address == cluster.address("state-2")
        for i in range(1, 4):
            code, _, resp = await call(proxy, STATE + "UpsertEvaluations",
                                       state_pb2.UpsertEvaluationsRequest(
                                           evaluations=[_eval(i)]), secret=mgmt)
            assert code == grpc.StatusCode.OK, resp
    finally:
        await proxy.close()
        await stale.close()
