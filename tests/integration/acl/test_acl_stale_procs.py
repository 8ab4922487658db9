"""Default deny holds when etcd freezes: a real etcd process is SIGSTOPped
under two state servers with ``acl=True`` (in process, real grpc.aio), so
their ACL views can no longer be proven current.

* down policy ``deny``: a token's calls are refused UNAVAILABLE with reason
  ACL_DATA_STALE once the view is older than its bound, and served again
  after SIGCONT with no operator action;
* down policy ``extend-cache``: the same token keeps being served from the
  stale view (the documented trade-off).

The calls are stale reads (served from the state cache without etcd), so
the only thing that can refuse them is the ACL down policy. Every wait is
bounded; the etcd process is resumed and stopped whatever happens.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

import grpc
import pytest
from acl_cluster import ACL, STALE_READ, STATE, call, settings, until_code

from drover.api.acl.v1 import acl_pb2
from drover.config import AclSettings
from drover.dev.etcd import EtcdServer
from drover.rpc.app import load_app_factory
from drover.rpc.channels import channel
from drover.rpc.server import DroverServer

pytestmark = pytest.mark.slow

MAX_STALE = 3.0
#: Longest any one wait below may take, on a loaded machine.
BOUND = 30.0
READER = "namespace:\n  default: {policy: read}\n"


@dataclass
class Rig:
    etcd: EtcdServer
    deny: DroverServer
    extend: DroverServer
    reader: str

    def channel(self, server: DroverServer) -> grpc.aio.Channel:
        assert server.ctx is not None
        return channel(server.ctx.address)


async def _serve(endpoint: str, prefix: str, replica: str, policy: str) -> DroverServer:
    s = settings("state", endpoint, prefix, replica,
                 acl_settings=AclSettings(max_stale=MAX_STALE, down_policy=policy))
    server = DroverServer(s, load_app_factory("state")(s))
    await server.start()
    return server


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    etcd = EtcdServer(name="drover-acl-stale").start()
    servers: list[DroverServer] = []
    try:
        prefix = f"/t{uuid.uuid4().hex[:12]}/drover"
        servers.append(await _serve(etcd.endpoint, prefix, "deny", "deny"))
        servers.append(await _serve(etcd.endpoint, prefix, "extend", "extend-cache"))
        ch = channel(servers[0].ctx.address)  # type: ignore[union-attr]
        code, _, boot = await call(ch, ACL + "Bootstrap")
        assert code == grpc.StatusCode.OK, boot
        mgmt = boot.secret_id  # type: ignore[attr-defined]
        code, _, resp = await call(ch, ACL + "ApplyPolicy", acl_pb2.ApplyPolicyRequest(
            name="reader", rules=READER), secret=mgmt)
        assert code == grpc.StatusCode.OK, resp
        code, _, tok = await call(ch, ACL + "CreateToken", acl_pb2.CreateTokenRequest(
            name="reader", policies=["reader"]), secret=mgmt)
        assert code == grpc.StatusCode.OK, tok
        await ch.close()
        yield Rig(etcd, servers[0], servers[1], tok.secret_id)  # type: ignore[attr-defined]
    finally:
        etcd.resume()
        for server in servers:
            await server.stop(0)
        etcd.stop()


async def test_a_frozen_etcd_makes_the_view_stale_refused_then_served_again(rig: Rig) -> None:
    deny, extend = rig.channel(rig.deny), rig.channel(rig.extend)
    try:
        for ch in (deny, extend):  # both serve the token before the fault
            code, _, resp = await until_code(ch, rig.reader, grpc.StatusCode.OK,
                                             within=BOUND, poll=0.1)
            assert code == grpc.StatusCode.OK, resp
        rig.etcd.pause()
        frozen_at = time.monotonic()
        code, reason, details = await until_code(deny, rig.reader, grpc.StatusCode.UNAVAILABLE,
                                                 within=BOUND, poll=0.1)
        refused_after = time.monotonic() - frozen_at
        assert (code, reason) == (grpc.StatusCode.UNAVAILABLE, "ACL_DATA_STALE"), details
        assert "etcd" in str(details) and "stale" in str(details)
        assert rig.deny.acl is not None and rig.deny.acl.cache.freshness.stale
        # extend-cache: just as stale, still judged with the cached view.
        assert rig.extend.acl is not None and rig.extend.acl.cache.freshness.stale
        code, _, resp = await call(extend, STATE + "ListJobs", STALE_READ, secret=rig.reader)
        assert code == grpc.StatusCode.OK, resp
        rig.etcd.resume()
        resumed_at = time.monotonic()
        code, _, resp = await until_code(deny, rig.reader, grpc.StatusCode.OK,
                                         within=BOUND, poll=0.1)
        assert code == grpc.StatusCode.OK, resp
        assert not rig.deny.acl.cache.freshness.stale
        # Figures for the report (-s): the bound is MAX_STALE; the first
        # refusal comes after it, recovery after the next confirm read.
        print(f"refused {refused_after:.1f}s after SIGSTOP (bound {MAX_STALE:g}s); "
              f"served {time.monotonic() - resumed_at:.1f}s after SIGCONT")
    finally:
        await deny.close()
        await extend.close()
