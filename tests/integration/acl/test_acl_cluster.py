"""Access control end to end: a real cluster (two state replicas, broker,
watcher, proxy) with ``acl=True`` over the session etcd.

Anonymous and read-only callers are denied every mutation, directly and
through the proxy; management passes every check (bar the server-only
leader writes); a second bootstrap is refused; a revoked token is refused
by both state replicas; no secret is stored in etcd or logged.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

import grpc
import pytest
from acl_cluster import ACL, STATE, Cluster, call, forwarded, host_of, mutations, start_cluster

from drover.acl import bearer, hash_secret
from drover.acl.table import TABLE
from drover.api.acl.v1 import acl_pb2
from drover.api.broker.v1 import broker_pb2
from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import evaluation_pb2, job_pb2, node_pb2, scheduler_pb2

pytestmark = pytest.mark.slow

_B = "/drover.broker.v1.EvalBrokerService/"

READER = """
namespace:
  "*": {policy: read}
operator: {policy: read}
node: {policy: read}
"""
WORKER = "scheduler: {policy: write}\nnamespace: {'*': {capabilities: [read-job]}}"


@dataclass
class Acl:
    cluster: Cluster
    management: str
    reader: str
    worker: str
    prefix: str


@pytest.fixture(scope="module")
async def acl(etcd_endpoint: str) -> AsyncIterator[Acl]:
    prefix = f"/t{uuid.uuid4().hex[:12]}/drover"
    cluster = await start_cluster(etcd_endpoint, prefix)
    try:
        proxy = cluster.channel("proxy")
        code, reason, _ = await call(proxy, STATE + "ListJobs")
        assert (code, reason) == (grpc.StatusCode.PERMISSION_DENIED, "ACL_PERMISSION_DENIED")
        code, _, boot = await call(proxy, ACL + "Bootstrap")
        assert code == grpc.StatusCode.OK, boot
        mgmt = boot.secret_id
        secrets = {}
        for name, rules in (("reader", READER), ("worker", WORKER)):
            code, _, resp = await call(proxy, ACL + "ApplyPolicy", acl_pb2.ApplyPolicyRequest(
                name=name, rules=rules), secret=mgmt)
            assert code == grpc.StatusCode.OK, resp
            code, _, tok = await call(proxy, ACL + "CreateToken", acl_pb2.CreateTokenRequest(
                name=f"{name}-token", policies=[name]), secret=mgmt)
            assert code == grpc.StatusCode.OK, tok
            secrets[name] = tok.secret_id
        yield Acl(cluster, mgmt, secrets["reader"], secrets["worker"], prefix)
    finally:
        await cluster.close()


async def test_a_second_bootstrap_is_refused(acl: Acl) -> None:
    for where in ("proxy", "state-2"):
        code, reason, _ = await call(acl.cluster.channel(where), ACL + "Bootstrap")
        assert (code, reason) == (grpc.StatusCode.FAILED_PRECONDITION,
                                  "ACL_ALREADY_BOOTSTRAPPED")


async def test_anonymous_and_read_only_are_denied_every_mutation(acl: Acl) -> None:
    methods = mutations()
    assert len(methods) >= 20
    calls = 0
    for method in methods:
        routes = [host_of(method)] + (["proxy"] if forwarded(method) else [])
        for where in routes:
            ch = acl.cluster.channel(where)
            for who, secret in (("anonymous", ""), ("read-only", acl.reader)):
                code, reason, details = await call(ch, method, secret=secret)
                calls += 1
                assert (code, reason) == (grpc.StatusCode.PERMISSION_DENIED,
                                          "ACL_PERMISSION_DENIED"), (method, where, who, details)
                assert acl.reader not in details
    assert calls >= 4 * len(methods) - 2 * len([m for m in methods if not forwarded(m)])


async def test_read_only_reads_and_anonymous_follows_the_anonymous_policy(acl: Acl) -> None:
    proxy = acl.cluster.channel("proxy")
    lst = state_pb2.ListJobsRequest(namespace="*")
    assert (await call(proxy, STATE + "ListJobs", lst, secret=acl.reader))[0] == grpc.StatusCode.OK
    code, reason, _ = await call(proxy, STATE + "ListJobs", lst)
    assert (code, reason) == (grpc.StatusCode.PERMISSION_DENIED, "ACL_PERMISSION_DENIED")
    code, _, _ = await call(proxy, ACL + "ApplyPolicy", acl_pb2.ApplyPolicyRequest(
        name="anonymous", rules="namespace: {default: {policy: read}}"), secret=acl.management)
    assert code == grpc.StatusCode.OK
    default = state_pb2.ListJobsRequest(namespace="default")
    for _ in range(100):  # the caches apply the policy from their watch
        if (await call(proxy, STATE + "ListJobs", default))[0] == grpc.StatusCode.OK:
            break
        await asyncio.sleep(0.05)
    assert (await call(proxy, STATE + "ListJobs", default))[0] == grpc.StatusCode.OK
    # "*" by a caller who may read only "default": narrowed, not refused (Nomad filters)
    code, _, listed = await call(proxy, STATE + "ListJobs", lst)
    assert code == grpc.StatusCode.OK and {j.namespace for j in listed.jobs} <= {"default"}
    code, _, _ = await call(proxy, ACL + "DeletePolicy", acl_pb2.DeletePolicyRequest(
        name="anonymous"), secret=acl.management)
    assert code == grpc.StatusCode.OK


async def test_bad_tokens_are_unauthenticated_without_echoing_them(acl: Acl) -> None:
    ch = acl.cluster.channel("proxy")
    bogus = "00000000-dead-beef-0000-000000000000"
    code, reason, details = await call(ch, STATE + "ListJobs", secret=bogus)
    assert (code, reason) == (grpc.StatusCode.UNAUTHENTICATED, "ACL_TOKEN_INVALID")
    assert bogus not in details
    md = (("authorization", f"Basic {bogus}"),)
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await ch.unary_unary(STATE + "ListJobs", request_serializer=lambda m: m.SerializeToString(),
                             response_deserializer=state_pb2.ListJobsResponse.FromString)(
            state_pb2.ListJobsRequest(), metadata=md, timeout=5)
    assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert bogus not in (err.value.details() or "")


async def test_management_passes_every_check_but_the_server_only_writes(acl: Acl) -> None:
    proxy = acl.cluster.channel("proxy")
    for method in mutations():
        code, _, details = await call(acl.cluster.channel(host_of(method)), method,
                                           secret=acl.management)
        if TABLE[method].kind == "server":  # a leader's write: server identity only
            assert code == grpc.StatusCode.PERMISSION_DENIED
            continue
        assert code not in (grpc.StatusCode.PERMISSION_DENIED,
                            grpc.StatusCode.UNAUTHENTICATED), (method, details)
    # The attack, now as management: pause the broker, delete every eval.
    job = job_pb2.Job(id="web", namespace="default", type=job_pb2.JOB_TYPE_SERVICE,
                      datacenters=["dc1"],
                      task_groups=[job_pb2.TaskGroup(name="g", count=1)])
    code, _, reg = await call(proxy, STATE + "RegisterJob", state_pb2.RegisterJobRequest(job=job),
                              secret=acl.management)
    assert code == grpc.StatusCode.OK, reg
    pause = state_pb2.SetSchedulerConfigRequest(
        config=scheduler_pb2.SchedulerConfig(pause_eval_broker=True))
    for secret in ("", acl.reader, acl.worker):
        assert (await call(proxy, STATE + "SetSchedulerConfig", pause, secret=secret))[0] == \
            grpc.StatusCode.PERMISSION_DENIED
    assert (await call(proxy, STATE + "SetSchedulerConfig", pause,
                       secret=acl.management))[0] == grpc.StatusCode.OK
    delete = state_pb2.DeleteEvaluationsRequest(namespace="*", filter='job_id == "nothing"')
    for secret in ("", acl.reader, acl.worker):
        assert (await call(proxy, STATE + "DeleteEvaluations", delete, secret=secret))[0] == \
            grpc.StatusCode.PERMISSION_DENIED
    code, _, resp = await call(proxy, STATE + "DeleteEvaluations", delete, secret=acl.management)
    assert code == grpc.StatusCode.OK, resp
    resume = state_pb2.SetSchedulerConfigRequest(config=scheduler_pb2.SchedulerConfig())
    assert (await call(proxy, STATE + "SetSchedulerConfig", resume,
                       secret=acl.management))[0] == grpc.StatusCode.OK


async def test_a_worker_token_dequeues_and_the_broker_writes_the_outcome_as_server(
    acl: Acl,
) -> None:
    proxy = acl.cluster.channel("proxy")
    job = job_pb2.Job(id="batch1", namespace="default", type=job_pb2.JOB_TYPE_BATCH,
                      datacenters=["dc1"],
                      task_groups=[job_pb2.TaskGroup(name="g", count=1)])
    code, _, reg = await call(proxy, STATE + "RegisterJob", state_pb2.RegisterJobRequest(job=job),
                              secret=acl.management)
    assert code == grpc.StatusCode.OK, reg
    got = None
    for _ in range(50):
        code, _, got = await call(proxy, _B + "Dequeue", broker_pb2.DequeueRequest(
            schedulers=["batch"], timeout={"seconds": 1}), secret=acl.worker)
        assert code == grpc.StatusCode.OK, got
        if got.token:
            break
    assert got is not None and got.token, "the registered job's evaluation was not dequeued"
    code, _, ack = await call(proxy, _B + "Ack", broker_pb2.AckRequest(
        eval_id=got.evaluation.id, token=got.token), secret=acl.worker)
    assert code == grpc.StatusCode.OK, ack
    ev = None
    for _ in range(100):
        code, _, ev = await call(proxy, STATE + "GetEvaluation", state_pb2.GetEvaluationRequest(
            id=got.evaluation.id), secret=acl.reader)
        if code == grpc.StatusCode.OK and ev.evaluation.status == 3:  # COMPLETE
            break
        await asyncio.sleep(0.05)
    assert ev is not None and ev.evaluation.status == 3, ev


async def test_revocation_is_refused_by_every_state_replica(acl: Acl) -> None:
    proxy = acl.cluster.channel("proxy")
    code, _, tok = await call(proxy, ACL + "CreateToken", acl_pb2.CreateTokenRequest(
        name="short-lived", policies=["reader"]), secret=acl.management)
    assert code == grpc.StatusCode.OK
    replicas = [acl.cluster.channel("state-1"), acl.cluster.channel("state-2")]
    for ch in replicas:
        code, _, me = await call(ch, ACL + "GetSelfToken", secret=tok.secret_id)
        assert code == grpc.StatusCode.OK and me.token.accessor_id == tok.token.accessor_id
    code, _, _ = await call(replicas[0], ACL + "RevokeToken", acl_pb2.RevokeTokenRequest(
        accessor_id=tok.token.accessor_id), secret=acl.management)
    assert code == grpc.StatusCode.OK
    t0 = time.monotonic()
    refused_after: dict[int, float] = {}
    while len(refused_after) < len(replicas) and time.monotonic() - t0 < 5:
        for i, ch in enumerate(replicas):
            if i not in refused_after:
                code, reason, _ = await call(ch, STATE + "ListJobs", secret=tok.secret_id)
                if code == grpc.StatusCode.UNAUTHENTICATED:
                    assert reason == "ACL_TOKEN_INVALID"
                    refused_after[i] = time.monotonic() - t0
        await asyncio.sleep(0.01)
    assert sorted(refused_after) == [0, 1], refused_after
    print(f"revocation refused after {refused_after} s")  # a figure for the report (-s)


async def test_no_secret_is_stored_in_etcd_in_plain_text(acl: Acl, etcd_endpoint: str) -> None:
    from drover.config import EtcdSettings
    from drover.coord import EtcdKV, connect

    server_token = acl.cluster.servers["state-1"].acl.server_token  # type: ignore[union-attr]
    secrets = [acl.management, acl.reader, acl.worker, server_token]
    client = await connect(EtcdSettings(endpoints=(etcd_endpoint,)), purpose="scan")
    try:
        resp = await EtcdKV(client).range(b"\0", b"\0")  # every key of the etcd
        blob = b"\n".join(kv.key + b"=" + kv.value for kv in resp.kvs)
    finally:
        await client.close()
    assert acl.prefix.encode() in blob and hash_secret(acl.management) in blob  # scanned
    for secret in secrets:
        assert secret.encode() not in blob


async def test_secrets_never_reach_the_logs(acl: Acl, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    proxy = acl.cluster.channel("proxy")
    await call(proxy, STATE + "SetSchedulerConfig", secret=acl.reader)
    await call(proxy, STATE + "ListJobs", secret=acl.reader + "x")
    await call(proxy, ACL + "GetSelfToken", secret=acl.management)
    await call(proxy, ACL + "CreateToken", acl_pb2.CreateTokenRequest(
        name="n", policies=["nope"]), secret=acl.management)
    assert caplog.records  # the access log did record the calls
    for secret in (acl.reader, acl.management):
        assert secret not in caplog.text


async def test_leader_only_writes_need_the_server_identity_even_with_a_valid_fence(
    acl: Acl, etcd_endpoint: str,
) -> None:
    """A management token holding the broker leader's real fence still cannot
    write an outcome: the state service wants the server identity too."""
    from drover.config import EtcdSettings
    from drover.coord import EtcdKV, connect
    from drover.coord.keys import Keyspace
    from drover.coord.kv import prefix_end

    prefix = Keyspace(acl.prefix).election_prefix("broker").encode()
    client = await connect(EtcdSettings(endpoints=(etcd_endpoint,)), purpose="probe")
    try:
        resp = await EtcdKV(client).range(prefix, prefix_end(prefix))
    finally:
        await client.close()
    assert resp.kvs, "no broker election key"
    kv = min(resp.kvs, key=lambda k: k.create_revision)
    fence = (("drover-fence", f"{kv.key.decode()}@{kv.create_revision}"),)
    done = evaluation_pb2.Evaluation(id="forged", namespace="default", type="service",
                                     status=evaluation_pb2.EVALUATION_STATUS_COMPLETE)
    ch = acl.cluster.channel("state-1")
    for method, req in ((STATE + "UpsertEvaluations",
                         state_pb2.UpsertEvaluationsRequest(evaluations=[done])),
                        (STATE + "UpdateEvaluations",
                         state_pb2.UpdateEvaluationsRequest(creates=[done]))):
        req_cls = type(req)
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await ch.unary_unary(method, request_serializer=req_cls.SerializeToString,
                                 response_deserializer=lambda b: b)(
                req, metadata=(*fence, ("authorization", f"Bearer {acl.management}")),
                timeout=5)
        assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED, (method, err.value)
    code, _, _ = await call(ch, STATE + "GetEvaluation", state_pb2.GetEvaluationRequest(
        id="forged"), secret=acl.management)
    assert code == grpc.StatusCode.NOT_FOUND


async def test_undecodable_requests_get_a_clear_status_with_acls_on(acl: Acl) -> None:
    ch = acl.cluster.channel("state-1")
    raw = ch.unary_unary(STATE + "RegisterJob", request_serializer=lambda b: b,
                         response_deserializer=lambda b: b)
    for secret, code in (("", grpc.StatusCode.PERMISSION_DENIED),
                         (acl.management, grpc.StatusCode.INVALID_ARGUMENT)):
        md = (("authorization", f"Bearer {secret}"),) if secret else ()
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await raw(b"\xff\xff\xff", metadata=md, timeout=5)
        assert err.value.code() == code


async def test_a_deployment_write_reaches_state_through_the_watchers_server_identity(
    acl: Acl,
) -> None:
    """The user needs submit-job at the watcher; the watcher then writes
    UpdateDeployment (server only, fenced) to state as the server."""
    from drover.api.deployments.v1 import deployments_pb2

    proxy = acl.cluster.channel("proxy")
    tg = job_pb2.TaskGroup(name="g", count=1, update=job_pb2.UpdateStrategy(max_parallel=1))
    job = job_pb2.Job(id="rolling", namespace="default", type=job_pb2.JOB_TYPE_SERVICE,
                      datacenters=["dc1"], task_groups=[tg])
    code, _, reg = await call(proxy, STATE + "RegisterJob", state_pb2.RegisterJobRequest(job=job),
                              secret=acl.management)
    assert code == grpc.StatusCode.OK and reg.deployment_id, reg
    code, _, _ = await call(proxy, ACL + "ApplyPolicy", acl_pb2.ApplyPolicyRequest(
        name="deployer", rules="namespace: {default: {capabilities: [submit-job]}}"),
        secret=acl.management)
    assert code == grpc.StatusCode.OK
    code, _, tok = await call(proxy, ACL + "CreateToken", acl_pb2.CreateTokenRequest(
        name="deployer", policies=["deployer"]), secret=acl.management)
    assert code == grpc.StatusCode.OK
    pause = deployments_pb2.PauseDeploymentRequest(namespace="default",
                                                   deployment_id=reg.deployment_id, pause=True)
    method = "/drover.deployments.v1.DeploymentWatcherService/PauseDeployment"
    assert (await call(proxy, method, pause, secret=acl.reader))[0] == \
        grpc.StatusCode.PERMISSION_DENIED
    resp = None
    for _ in range(100):  # the watcher may still be picking the new deployment up
        code, _, resp = await call(proxy, method, pause, secret=tok.secret_id)
        if code == grpc.StatusCode.OK:
            break
        assert code not in (grpc.StatusCode.PERMISSION_DENIED,
                            grpc.StatusCode.UNAUTHENTICATED), resp
        await asyncio.sleep(0.05)
    assert code == grpc.StatusCode.OK, resp
    code, _, got = await call(proxy, STATE + "GetDeployment", state_pb2.GetDeploymentRequest(
        namespace="default", id=reg.deployment_id), secret=acl.reader)
    assert code == grpc.StatusCode.OK and got.deployment.status == 2, got  # PAUSED


async def test_subscribe_is_checked_per_topic_and_filters_every_namespace(acl: Acl) -> None:
    """Nomad's event stream rules, through the proxy: a token with read-job
    in one namespace follows Job events of ``*`` but gets only that
    namespace's; the Node topic needs node read, every topic at once (and
    the scheduler config) a management token."""
    proxy = acl.cluster.channel("proxy")
    code, _, _ = await call(proxy, ACL + "ApplyPolicy", acl_pb2.ApplyPolicyRequest(
        name="team", rules="namespace: {team-a: {policy: read}}"), secret=acl.management)
    assert code == grpc.StatusCode.OK
    code, _, tok = await call(proxy, ACL + "CreateToken", acl_pb2.CreateTokenRequest(
        name="team-token", policies=["team"]), secret=acl.management)
    assert code == grpc.StatusCode.OK
    for topics, want in (([state_pb2.TOPIC_NODE], "TOPIC_NODE"), ([], "every topic"),
                         ([state_pb2.TOPIC_SCHEDULER_CONFIG], "TOPIC_SCHEDULER_CONFIG")):
        code, reason, details = await call(proxy, STATE + "Subscribe", state_pb2.SubscribeRequest(
            topics=topics), secret=tok.secret_id)
        assert (code, reason) == (grpc.StatusCode.PERMISSION_DENIED,
                                  "ACL_PERMISSION_DENIED"), (topics, details)
        assert want in details
    code, _, _ = await call(proxy, STATE + "Subscribe", state_pb2.SubscribeRequest(
        topics=[state_pb2.TOPIC_NODE]), secret=acl.reader)
    assert code == grpc.StatusCode.OK
    stream = state_pb2_grpc.StateServiceStub(proxy).Subscribe(state_pb2.SubscribeRequest(
        topics=[state_pb2.TOPIC_JOB], namespace="*"), metadata=bearer(tok.secret_id),
        timeout=10)
    first = await stream.read()  # the stream is open (its first index)
    assert not first.events
    for ns in ("team-b", "team-a"):  # the one it may not read first
        job = job_pb2.Job(id=f"sub-{ns}", namespace=ns, type=job_pb2.JOB_TYPE_BATCH,
                          datacenters=["dc1"], task_groups=[job_pb2.TaskGroup(name="g", count=1)])
        code, _, reg = await call(proxy, STATE + "RegisterJob", state_pb2.RegisterJobRequest(
            job=job), secret=acl.management)
        assert code == grpc.StatusCode.OK, reg
    seen: list[str] = []
    while not seen:
        resp = await stream.read()
        seen += [e.namespace for e in resp.events]
    stream.cancel()
    assert seen == ["team-a"]


async def test_with_acls_a_node_speaks_only_with_its_own_secret(acl: Acl) -> None:
    """Nomad's client-only rule: with ACLs on, a heartbeat or a
    re-registration needs the node's own secret (a management token is not
    enough); an operator's drain needs only node write."""
    from drover.acl.node_secret import node_secret_metadata
    proxy = acl.cluster.channel("proxy")
    stub = state_pb2_grpc.StateServiceStub(proxy)
    code, _, _ = await call(proxy, ACL + "ApplyPolicy", acl_pb2.ApplyPolicyRequest(
        name="client", rules="node: {policy: write}"), secret=acl.management)
    assert code == grpc.StatusCode.OK
    code, _, tok = await call(proxy, ACL + "CreateToken", acl_pb2.CreateTokenRequest(
        name="client-token", policies=["client"]), secret=acl.management)
    assert code == grpc.StatusCode.OK
    md = bearer(tok.secret_id)
    reg = await stub.UpsertNode(state_pb2.UpsertNodeRequest(node=node_pb2.Node(
        id="acl-node", status=node_pb2.NODE_STATUS_READY)), metadata=md, timeout=5)
    assert reg.secret_id
    beat = state_pb2.UpdateNodeStatusRequest(id="acl-node", heartbeat=True)
    for who in (md, bearer(acl.management)):
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.UpdateNodeStatus(beat, metadata=who, timeout=5)
        assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
        with pytest.raises(grpc.aio.AioRpcError):
            await stub.UpsertNode(state_pb2.UpsertNodeRequest(node=node_pb2.Node(
                id="acl-node")), metadata=who, timeout=5)
    own = (*md, *node_secret_metadata(reg.secret_id))
    await stub.UpdateNodeStatus(beat, metadata=own, timeout=5)
    await stub.UpdateNodeStatus(state_pb2.UpdateNodeStatusRequest(id="acl-node", drain=True),
                                metadata=md, timeout=5)


async def test_a_star_list_returns_what_the_token_may_read(acl: Acl) -> None:
    """Nomad's filtering: objects of namespaces the token may not read are
    left out of a ``*`` list (and count); a token that may read no namespace
    is still refused, and a ``*`` write still needs every namespace."""
    proxy = acl.cluster.channel("proxy")
    run = uuid.uuid4().hex[:6]
    for ns in ("default", f"team-{run}"):
        code, _, resp = await call(proxy, STATE + "RegisterJob", state_pb2.RegisterJobRequest(
            job=job_pb2.Job(id=f"vis-{run}", namespace=ns, type=job_pb2.JOB_TYPE_BATCH,
                            datacenters=["dc1"], task_groups=[job_pb2.TaskGroup(
                                name="g", count=1)])), secret=acl.management)
        assert code == grpc.StatusCode.OK, resp
    rules = "namespace: {default: {policy: read}}\nnode: {policy: read}"
    code, _, _ = await call(proxy, ACL + "ApplyPolicy", acl_pb2.ApplyPolicyRequest(
        name=f"default-{run}", rules=rules), secret=acl.management)
    assert code == grpc.StatusCode.OK
    code, _, tok = await call(proxy, ACL + "CreateToken", acl_pb2.CreateTokenRequest(
        name=f"default-{run}", policies=[f"default-{run}"]), secret=acl.management)
    assert code == grpc.StatusCode.OK
    mine = tok.secret_id
    everything = state_pb2.ListJobsRequest(namespace="*", prefix=f"vis-{run}")
    for _ in range(100):  # the token reaches every replica's view through its watch
        code, _, listed = await call(proxy, STATE + "ListJobs", everything, secret=mine)
        if code == grpc.StatusCode.OK:
            break
        await asyncio.sleep(0.05)
    assert code == grpc.StatusCode.OK
    assert [(j.namespace, j.id) for j in listed.jobs] == [("default", f"vis-{run}")]
    code, _, full = await call(proxy, STATE + "ListJobs", everything, secret=acl.management)
    assert {j.namespace for j in full.jobs} == {"default", f"team-{run}"}
    code, _, counted = await call(proxy, STATE + "CountEvaluations",
                                  state_pb2.CountEvaluationsRequest(
                                      namespace="*", filter=f'job_id == "vis-{run}"'),
                                  secret=mine)
    assert code == grpc.StatusCode.OK and counted.count == 1  # the default job's one
    # `drover node list`'s allocation read, across namespaces, is answered
    code, _, _ = await call(proxy, STATE + "ListAllocations", state_pb2.ListAllocationsRequest(
        namespace="*"), secret=mine)
    assert code == grpc.StatusCode.OK
    # the worker token may list evaluations but read jobs nowhere: refused
    code, reason, _ = await call(proxy, STATE + "ListJobs", everything, secret=acl.worker)
    assert (code, reason) == (grpc.StatusCode.PERMISSION_DENIED, "ACL_PERMISSION_DENIED")


async def test_a_current_nomad_policy_carries_over_with_its_fine_grained_names(
        acl: Acl) -> None:
    """Nomad's acl/policy.go names (``register-job``, ``deregister-job``, ...)
    each grant their own RPC, and the endpoints accept ``submit-job`` too
    (Nomad's ``AllowNsOpAnyOf(ns, submit-job, <fine>)`` in job_endpoint.go /
    deployment_endpoint.go); ``node_pool`` and ``host_volume`` blocks (Nomad's
    ``Parse``) are accepted and ignored, with a warning."""
    proxy = acl.cluster.channel("proxy")
    rules = """
namespace:
  default: {capabilities: [read-job, register-job, plan-job]}
node_pool:
  "*": {policy: read}
host_volume:
  "*": {policy: write}
"""
    code, _, resp = await call(proxy, ACL + "ApplyPolicy", acl_pb2.ApplyPolicyRequest(
        name="registrar", rules=rules), secret=acl.management)
    assert code == grpc.StatusCode.OK, resp
    assert [w.split(":")[0] for w in resp.warnings] == ["node_pool", "host_volume"]
    secrets = {}
    for name, pol in (("registrar", "registrar"), ("submitter", "submitter")):
        if name == "submitter":
            code, _, resp = await call(proxy, ACL + "ApplyPolicy", acl_pb2.ApplyPolicyRequest(
                name=pol, rules="namespace: {default: {capabilities: [submit-job]}}"),
                secret=acl.management)
            assert code == grpc.StatusCode.OK, resp
        code, _, tok = await call(proxy, ACL + "CreateToken", acl_pb2.CreateTokenRequest(
            name=name, policies=[pol]), secret=acl.management)
        assert code == grpc.StatusCode.OK, tok
        secrets[name] = tok.secret_id
    job = job_pb2.Job(id="fine", namespace="default", type=job_pb2.JOB_TYPE_SERVICE,
                      datacenters=["dc1"], task_groups=[job_pb2.TaskGroup(name="g", count=1)])
    reg = state_pb2.RegisterJobRequest(job=job)
    dereg = state_pb2.DeregisterJobRequest(namespace="default", id="fine")
    for _ in range(100):  # the caches apply the new tokens from their watch
        code, _, got = await call(proxy, STATE + "RegisterJob", reg, secret=secrets["registrar"])
        if code == grpc.StatusCode.OK:
            break
        await asyncio.sleep(0.05)
    assert code == grpc.StatusCode.OK, got
    code, reason, details = await call(proxy, STATE + "DeregisterJob", dereg,
                                       secret=secrets["registrar"])
    assert (code, reason) == (grpc.StatusCode.PERMISSION_DENIED, "ACL_PERMISSION_DENIED")
    assert "deregister-job (or submit-job)" in details
    for _ in range(100):
        code, _, got = await call(proxy, STATE + "DeregisterJob", dereg,
                                  secret=secrets["submitter"])
        if code == grpc.StatusCode.OK:
            break
        await asyncio.sleep(0.05)
    assert code == grpc.StatusCode.OK, got


async def _token(acl: Acl, name: str, rules: str) -> str:
    proxy = acl.cluster.channel("proxy")
    code, _, resp = await call(proxy, ACL + "ApplyPolicy", acl_pb2.ApplyPolicyRequest(
        name=name, rules=rules), secret=acl.management)
    assert code == grpc.StatusCode.OK, resp
    code, _, tok = await call(proxy, ACL + "CreateToken", acl_pb2.CreateTokenRequest(
        name=name, policies=[name]), secret=acl.management)
    assert code == grpc.StatusCode.OK, tok
    secret: str = tok.secret_id
    return secret


async def test_purge_needs_purge_job_and_purge_job_may_stop(acl: Acl) -> None:
    """Nomad's ``Job.Deregister``: with purge it checks
    ``AllowNsOpAnyOf(submit-job, purge-job)``, without it also accepts
    ``deregister-job``. Was: ``deregister-job`` for both (a ``purge-job``
    token could not purge; a ``deregister-job`` one could)."""
    proxy = acl.cluster.channel("proxy")
    stopper = await _token(acl, "stopper", "namespace: {default: {capabilities: "
                                           "[register-job, deregister-job]}}")
    purger = await _token(acl, "purger", "namespace: {default: {capabilities: "
                                         "[register-job, purge-job]}}")
    job = job_pb2.Job(id="purgeable", namespace="default", type=job_pb2.JOB_TYPE_SERVICE,
                      datacenters=["dc1"], task_groups=[job_pb2.TaskGroup(name="g", count=1)])
    for _ in range(100):  # the caches apply the new tokens from their watch
        code, _, got = await call(proxy, STATE + "RegisterJob",
                                  state_pb2.RegisterJobRequest(job=job), secret=purger)
        if code == grpc.StatusCode.OK:
            break
        await asyncio.sleep(0.05)
    assert code == grpc.StatusCode.OK, got
    purge = state_pb2.DeregisterJobRequest(namespace="default", id="purgeable", purge=True)
    stop = state_pb2.DeregisterJobRequest(namespace="default", id="purgeable")
    for _ in range(100):
        code, reason, details = await call(proxy, STATE + "DeregisterJob", purge,
                                           secret=stopper)
        if code == grpc.StatusCode.PERMISSION_DENIED:
            break
        await asyncio.sleep(0.05)
    assert (code, reason) == (grpc.StatusCode.PERMISSION_DENIED, "ACL_PERMISSION_DENIED")
    assert "purge-job (or submit-job)" in details
    code, _, got = await call(proxy, STATE + "DeregisterJob", stop, secret=stopper)
    assert code == grpc.StatusCode.OK, got
    code, _, got = await call(proxy, STATE + "DeregisterJob", stop, secret=purger)
    assert code == grpc.StatusCode.OK, got  # purge-job implies a stop
    code, _, got = await call(proxy, STATE + "DeregisterJob", purge, secret=purger)
    assert code == grpc.StatusCode.OK, got
    code, _, _ = await call(proxy, STATE + "GetJob", state_pb2.GetJobRequest(
        namespace="default", id="purgeable"), secret=acl.management)
    assert code == grpc.StatusCode.NOT_FOUND
