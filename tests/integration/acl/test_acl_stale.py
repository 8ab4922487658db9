"""A stalled ACL watch over a live etcd: a state server (real grpc.aio,
``acl=True``, the session etcd) whose ACL view stops applying its watch
while etcd itself keeps answering, the case no liveness probe sees.

The token revoked during the stall is *not* served past the bound: the
confirm read finds the view one key too many and never dates it current,
so calls are refused ACL_DATA_STALE; once the watch is consumed again the
view catches up by itself and the revoked token is UNAUTHENTICATED. The
staleness gauge is registered and follows the view.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import grpc
import pytest
from acl_cluster import ACL, call, settings, until_code

from drover.api.acl.v1 import acl_pb2
from drover.config import AclSettings
from drover.rpc.app import load_app_factory
from drover.rpc.channels import channel
from drover.rpc.server import DroverServer
from drover.telemetry.observed import registered

pytestmark = pytest.mark.slow

MAX_STALE = 1.5
BOUND = 20.0  # longest any one wait may take, on a loaded machine


@pytest.fixture
async def server(etcd_endpoint: str) -> AsyncIterator[DroverServer]:
    s = settings("state", etcd_endpoint, f"/t{uuid.uuid4().hex[:12]}/drover", "stall",
                 acl_settings=AclSettings(max_stale=MAX_STALE))
    srv = DroverServer(s, load_app_factory("state")(s))
    await srv.start()
    try:
        yield srv
    finally:
        await srv.stop(0)


async def test_a_token_revoked_while_the_watch_stalls_is_refused_past_the_bound(
        server: DroverServer) -> None:
    assert server.ctx is not None and server.acl is not None
    cache = server.acl.cache
    assert "drover.acl.staleness" in registered()
    ch = channel(server.ctx.address)
    try:
        _, _, boot = await call(ch, ACL + "Bootstrap")
        mgmt = boot.secret_id  # type: ignore[attr-defined]
        code, _, tok = await call(ch, ACL + "CreateToken", acl_pb2.CreateTokenRequest(
            name="doomed", type=acl_pb2.TOKEN_TYPE_MANAGEMENT), secret=mgmt)
        assert code == grpc.StatusCode.OK, tok
        doomed = tok.secret_id  # type: ignore[attr-defined]
        code, _, resp = await until_code(ch, doomed, grpc.StatusCode.OK, within=BOUND)
        assert code == grpc.StatusCode.OK, resp
        # The watch stalls (its consumer stops); etcd answers everything else.
        assert cache._task is not None
        cache._task.cancel()
        await asyncio.gather(cache._task, return_exceptions=True)
        code, _, resp = await call(ch, ACL + "RevokeToken", acl_pb2.RevokeTokenRequest(
            accessor_id=tok.token.accessor_id), secret=mgmt)  # type: ignore[attr-defined]
        assert code == grpc.StatusCode.OK, resp
        assert cache.state.resolve(doomed).accessor_id  # the stalled view still holds it
        code, reason, details = await until_code(ch, doomed, grpc.StatusCode.UNAVAILABLE,
                                                 within=BOUND)
        assert (code, reason) == (grpc.StatusCode.UNAVAILABLE, "ACL_DATA_STALE"), details
        assert cache.freshness.staleness() > MAX_STALE
        # The watch flows again: no operator action, the revocation lands.
        cache._task = asyncio.create_task(cache._apply())
        code, reason, details = await until_code(ch, doomed, grpc.StatusCode.UNAUTHENTICATED,
                                               within=BOUND)
        assert (code, reason) == (grpc.StatusCode.UNAUTHENTICATED, "ACL_TOKEN_INVALID"), details
        code, _, resp = await until_code(ch, mgmt, grpc.StatusCode.OK, within=BOUND)
        assert code == grpc.StatusCode.OK, resp
        assert cache.freshness.staleness() <= MAX_STALE
    finally:
        await ch.close()
