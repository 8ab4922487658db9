"""Without --acl the state service refuses ACL administration (a token
minted while anyone may call anything would be trusted once ACLs are on)."""

from __future__ import annotations

import grpc
import pytest

from drover.api.acl.v1 import acl_pb2, acl_pb2_grpc
from drover.rpc.remote import error_info


async def test_acl_calls_are_refused_when_acls_are_off(replica) -> None:
    stub = acl_pb2_grpc.AclServiceStub(replica.channel)
    for call in (stub.Bootstrap(acl_pb2.BootstrapRequest()),
                 stub.CreateToken(acl_pb2.CreateTokenRequest(name="x", policies=["p"])),
                 stub.GetSelfToken(acl_pb2.GetSelfTokenRequest())):
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await call
        assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        info = error_info(err.value)
        assert info is not None and info.reason == "ACL_DISABLED"
    page = await replica.store.range(f"{replica.service.cache.keys.base}acl/".encode(),
                                     f"{replica.service.cache.keys.base}acl0".encode())
    assert not page.kvs  # nothing was written
