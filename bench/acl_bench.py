"""The cost of access control per call, and how fast a revocation lands.

Two state servers on one etcd and keyspace, the same process, the same
run: one with ``acl=False``, one with ``acl=True`` (watch-fed cache, the
interceptor checking a client token with a namespace policy). Calls
alternate between them in rounds, so load drifts hit both alike:

1. p50/p90 latency of ``GetJob`` (a cache read: the check is a large share
   of it) and ``ListJobs`` without and with ACLs, and the difference;
2. revocation: RevokeToken on one server, then how long until a second
   ACL-enabled replica refuses the token (polled every millisecond).

Usage: python bench/acl_bench.py [--calls 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid

import grpc

from drover.acl import bearer
from drover.api.acl.v1 import acl_pb2, acl_pb2_grpc
from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import job_pb2
from drover.config import EtcdSettings, ServeSettings
from drover.dev.etcd import EtcdServer
from drover.rpc.app import load_app_factory
from drover.rpc.channels import channel
from drover.rpc.server import DroverServer


async def start(endpoint: str, prefix: str, name: str, acl: bool) -> DroverServer:
    s = ServeSettings(service="state", replica=name, shutdown_grace=0.0, acl=acl,
                      etcd=EtcdSettings(endpoints=(endpoint,), prefix=prefix))
    server = DroverServer(s, load_app_factory("state")(s), membership=True)
    await server.start()
    return server


def pct(xs: list[float], q: float) -> float:
    return statistics.quantiles(xs, n=100)[int(q) - 1] * 1e6


async def main(calls: int) -> None:
    etcd = EtcdServer(name="acl-bench").start()
    prefix = f"/bench{uuid.uuid4().hex[:8]}/drover"
    servers = []
    try:
        plain = await start(etcd.endpoint, prefix, "plain", False)
        guarded = await start(etcd.endpoint, prefix, "acl", True)
        other = await start(etcd.endpoint, prefix, "acl-2", True)
        servers = [plain, guarded, other]
        ch_plain = channel(plain.ctx.address)  # type: ignore[union-attr]
        ch_acl = channel(guarded.ctx.address)  # type: ignore[union-attr]
        ch_other = channel(other.ctx.address)  # type: ignore[union-attr]
        acl = acl_pb2_grpc.AclServiceStub(ch_acl)
        boot = await acl.Bootstrap(acl_pb2.BootstrapRequest())
        mgmt = bearer(boot.secret_id)
        await acl.ApplyPolicy(acl_pb2.ApplyPolicyRequest(
            name="ops", rules="namespace:\n  'team-*': {policy: write}\n  default: "
                               "{policy: read}\n  '*': {capabilities: [list-jobs]}\n"
                               "operator: {policy: read}\n"), metadata=mgmt)
        tok = await acl.CreateToken(acl_pb2.CreateTokenRequest(name="bench", policies=["ops"]),
                                    metadata=mgmt)
        md = bearer(tok.secret_id)
        job = job_pb2.Job(id="bench", namespace="default", type=job_pb2.JOB_TYPE_BATCH,
                          datacenters=["dc1"], task_groups=[job_pb2.TaskGroup(name="g", count=1)])
        s_plain = state_pb2_grpc.StateServiceStub(ch_plain)
        s_acl = state_pb2_grpc.StateServiceStub(ch_acl)
        await s_acl.RegisterJob(state_pb2.RegisterJobRequest(job=job), metadata=mgmt)
        consistent = state_pb2.GetJobRequest(namespace="default", id="bench")
        await s_plain.GetJob(consistent)  # every replica has caught up with the write
        await s_acl.GetJob(consistent, metadata=md)
        await state_pb2_grpc.StateServiceStub(ch_other).GetJob(consistent, metadata=md)
        get = state_pb2.GetJobRequest(namespace="default", id="bench",
                                      query={"stale": True})
        lst = state_pb2.ListJobsRequest(namespace="default", page_size=10,
                                        query={"stale": True})
        for method, req in (("GetJob", get), ("ListJobs", lst)):
            lat: dict[str, list[float]] = {"off": [], "on": []}
            for _ in range(50):  # warm both
                await getattr(s_plain, method)(req)
                await getattr(s_acl, method)(req, metadata=md)
            for i in range(calls):
                order = (("off", s_plain, ()), ("on", s_acl, md))
                for label, stub, meta in (order if i % 2 else order[::-1]):
                    t0 = time.perf_counter()
                    await getattr(stub, method)(req, metadata=meta)
                    lat[label].append(time.perf_counter() - t0)
            off50, on50 = pct(lat["off"], 50), pct(lat["on"], 50)
            print(f"{method:<9} p50 without ACL {off50:7.0f} us   with ACL {on50:7.0f} us   "
                  f"cost {on50 - off50:+6.0f} us ({(on50 / off50 - 1) * 100:+.1f}%)   "
                  f"p90 {pct(lat['off'], 90):.0f} / {pct(lat['on'], 90):.0f} us   "
                  f"({calls} calls each)")
        # Revocation: revoke on one replica, watch the other refuse.
        other_stub = state_pb2_grpc.StateServiceStub(ch_other)
        await other_stub.GetJob(get, metadata=md)
        t0 = time.perf_counter()
        await acl.RevokeToken(acl_pb2.RevokeTokenRequest(accessor_id=tok.token.accessor_id),
                              metadata=mgmt)
        revoked_at = time.perf_counter()
        while True:
            try:
                await other_stub.GetJob(get, metadata=md)
            except grpc.aio.AioRpcError as e:
                if e.code() == grpc.StatusCode.UNAUTHENTICATED:
                    break
                raise
            await asyncio.sleep(0.001)
        done = time.perf_counter()
        print(f"revocation: RevokeToken took {(revoked_at - t0) * 1e3:.1f} ms; the other "
              f"replica refused the token {(done - revoked_at) * 1e3:.1f} ms after it returned")
        for ch in (ch_plain, ch_acl, ch_other):
            await ch.close()
    finally:
        for s in servers:
            await s.stop(0)
        etcd.stop()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    asyncio.run(main(ap.parse_args().calls))
