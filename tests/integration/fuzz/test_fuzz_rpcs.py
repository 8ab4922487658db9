"""Every RPC of every service, fed requests generated from the protos.

Real state, broker, deployment-watcher and proxy servers on the session
etcd; each generated request is sent to the owning service directly and
through the proxy (and, sometimes, as bytes that are no message at all).
Asserted for every call:

* the status is never UNKNOWN or INTERNAL (a bad request is the client's
  fault and says so; an escape means an unchecked field reached code that
  raised);
* every refusal carries a google.rpc.ErrorInfo (the client can act on it);
* a refused call wrote nothing: no key under the cluster's prefix (but
  liveness keys) changed (DEADLINE_EXCEEDED excepted: a write may commit
  after the client gave up);
* at the end, every service still answers Health Check with SERVING.

Seeded and bounded (``MAX_EXAMPLES``, about 30-40 s on 2 cores): the same
run every time; a failure prints the request. ``FUZZ_EXAMPLES`` overrides
the count for a longer local run, ``FUZZ_SEED`` the seed, ``FUZZ_ACL=1``
turns access control on.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from fuzz_cluster import RPCS, DataRevision, Rpc, fuzz_cluster
from fuzz_strategies import messages, raw_bodies
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import allocation_pb2, evaluation_pb2, job_pb2, node_pb2
from drover.rpc.remote import error_info

pytestmark = pytest.mark.slow

MAX_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "1000"))
SEED = int(os.environ.get("FUZZ_SEED", "20261124"))
#: FUZZ_ACL=1: the same run against services with access control on, the
#: fuzzer anonymous (every call passes the access check's request reading).
ACL = os.environ.get("FUZZ_ACL", "") == "1"
CALL_TIMEOUT = 1.0
#: Codes a refusal may not have: the server failed, not the request.
FORBIDDEN = {grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL}
#: Ends decided by the client (its deadline), not answers of the server.
CLIENT_ENDS = {grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED}

REQUESTS = {rpc.path: st.one_of(messages(rpc.method.input_type),
                                messages(rpc.method.input_type, plausible=True))
            for rpc in RPCS}


@dataclass
class Outcome:
    code: grpc.StatusCode
    has_info: bool
    details: str


def _call(channel: grpc.Channel, rpc: Rpc, body: bytes) -> Outcome:
    """One call with raw bytes in and out; its status."""
    try:
        if rpc.method.server_streaming:
            stream = channel.unary_stream(rpc.path)(body, timeout=CALL_TIMEOUT)
            try:
                next(iter(stream))  # the stream started: that is an answer
            finally:
                stream.cancel()
        else:
            channel.unary_unary(rpc.path)(body, timeout=CALL_TIMEOUT)
    except grpc.RpcError as err:
        code = err.code()  # type: ignore[attr-defined]
        if code == grpc.StatusCode.CANCELLED and rpc.method.server_streaming:
            return Outcome(grpc.StatusCode.OK, True, "")
        info = error_info(err)
        return Outcome(code, info is not None, err.details() or "")  # type: ignore[attr-defined]
    except StopIteration:
        pass
    return Outcome(grpc.StatusCode.OK, True, "")


class Fuzzer:
    """Runs in a worker thread (Hypothesis drives sync code); reads the etcd
    revision through the test's event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, revision: DataRevision,
                 targets: Callable[[Rpc], list[tuple[str, grpc.Channel]]]) -> None:
        self.loop, self.revision, self.targets = loop, revision, targets
        self.calls: Counter[str] = Counter()
        self.codes: Counter[str] = Counter()

    def data_revision(self) -> tuple[int, int, int]:
        return asyncio.run_coroutine_threadsafe(self.revision.read(), self.loop).result(10)

    def quiet_revision(self) -> tuple[int, int, int]:
        """The data revision once background writers (the broker's deferred
        cancellations, the watcher's follow-ups) have been still for a moment."""
        last = self.data_revision()
        for _ in range(40):
            time.sleep(0.1)
            now = self.data_revision()
            if now == last:
                return now
            last = now
        return last

    def check(self, rpc: Rpc, body: bytes, shown: str) -> None:
        for via, channel in self.targets(rpc):
            before = self.data_revision()
            out = _call(channel, rpc, body)
            after = self.data_revision()
            self.calls[via] += 1
            self.codes[out.code.name] += 1
            where = f"{rpc.path} via {via} with {shown}"
            assert out.code not in FORBIDDEN, f"{out.code.name} from {where}: {out.details}"
            if out.code == grpc.StatusCode.OK or out.code in CLIENT_ENDS:
                continue
            assert out.has_info, f"{out.code.name} without ErrorInfo from {where}: {out.details}"
            if after != before:
                # A background write may have landed meanwhile: ask again on a
                # quiet cluster; a call that really writes and fails does it twice.
                before = self.quiet_revision()
                again = _call(channel, rpc, body)
                after = self.data_revision()
                assert again.code == grpc.StatusCode.OK or after == before, (
                    f"{again.code.name} from {where} changed the data revision "
                    f"{before} -> {after}")


async def seed_objects(cluster: Any) -> None:
    """Objects named like the plausible ids ("web", "job-1", "a"), so that
    plausible requests reach the handlers' paths past "not found"."""
    async with grpc.aio.insecure_channel(cluster.address("state")) as ch:
        stub = state_pb2_grpc.StateServiceStub(ch)
        group = job_pb2.TaskGroup(name="web", count=2,
                                  update=job_pb2.UpdateStrategy(max_parallel=1))
        web = await stub.RegisterJob(state_pb2.RegisterJobRequest(job=job_pb2.Job(
            id="web", datacenters=["dc1"], task_groups=[group])), timeout=10)
        await stub.RegisterJob(state_pb2.RegisterJobRequest(job=job_pb2.Job(
            id="job-1", type=job_pb2.JOB_TYPE_BATCH, datacenters=["dc1"],
            task_groups=[job_pb2.TaskGroup(name="a", count=1)])), timeout=10)
        await stub.UpsertNode(state_pb2.UpsertNodeRequest(node=node_pb2.Node(
            id="a", name="a", datacenter="dc1")), timeout=10)
        await stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(evaluations=[
            evaluation_pb2.Evaluation(id="a", job_id="web", type="service",
                                      triggered_by="job-register")]), timeout=10)
        await stub.UpsertAllocations(state_pb2.UpsertAllocationsRequest(allocations=[
            allocation_pb2.Allocation(id="a", job_id="web", deployment_id=web.deployment_id,
                                      eval_id=web.eval_id, node_id="a", task_group="web")]),
            timeout=10)


def _shown(request: Any) -> str:
    text = str(request).replace("\n", " ")
    return text if len(text) < 400 else text[:400] + f"... ({request.ByteSize()} bytes)"


async def test_every_rpc_of_every_service_refuses_bad_input_cleanly(
    etcd_endpoint: str, etcd_prefix: str, record_property: Any,
) -> None:
    loop = asyncio.get_running_loop()
    async with fuzz_cluster(etcd_endpoint, etcd_prefix, acl=ACL) as cluster:
        if not ACL:
            await seed_objects(cluster)
        revision = DataRevision(etcd_endpoint, etcd_prefix)
        channels = {s: grpc.insecure_channel(cluster.address(s), options=[
            ("grpc.max_send_message_length", 32 * 1024 * 1024)]) for s in cluster.servers}

        def targets(rpc: Rpc) -> list[tuple[str, grpc.Channel]]:
            out = [(rpc.owner, channels[rpc.owner])]
            if rpc.owner != "proxy":
                out.append(("proxy", channels["proxy"]))
            return out

        fuzzer = Fuzzer(loop, revision, targets)

        @seed(SEED)
        @settings(max_examples=MAX_EXAMPLES, deadline=None, database=None,
                  phases=(Phase.generate, Phase.shrink), derandomize=False,
                  suppress_health_check=list(HealthCheck))
        @given(st.data())
        def run(data: st.DataObject) -> None:
            rpc = data.draw(st.sampled_from(RPCS), label="rpc")
            if data.draw(st.integers(0, 9), label="raw") == 0:
                body = data.draw(raw_bodies(), label="body")
                fuzzer.check(rpc, body, f"raw bytes {body[:40]!r} ({len(body)} bytes)")
                return
            request = data.draw(REQUESTS[rpc.path], label="request")
            body = request.SerializeToString()
            if len(body) > 12 * 1024 * 1024:
                return  # past the client's own send limit: not a server answer
            fuzzer.check(rpc, body, _shown(request))

        started = time.monotonic()
        try:
            await asyncio.to_thread(run)
            for service in cluster.servers:
                assert await cluster.serving(service), f"{service} stopped SERVING"
        finally:
            for ch in channels.values():
                ch.close()
            await revision.close()
        total = sum(fuzzer.calls.values())
        record_property("fuzz_calls", total)
        print(f"\nfuzz: {total} calls in {time.monotonic() - started:.1f}s "
              f"({dict(fuzzer.calls)}); statuses {dict(fuzzer.codes)}")
        assert total >= MAX_EXAMPLES  # every example made at least one call
