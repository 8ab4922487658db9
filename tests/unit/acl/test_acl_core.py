"""The pure ACL core: policy documents, merging, globs, the RPC table."""

from __future__ import annotations

import pytest

from drover.acl import (
    TABLE,
    Acl,
    AclKeys,
    AclState,
    Identity,
    IdentityKind,
    InvalidPolicy,
    Level,
    PermissionDenied,
    Unauthenticated,
    authorize,
    hash_secret,
    parse_bearer,
    parse_policy,
    server_secret,
)
from drover.api.acl.v1 import acl_pb2
from drover.api.broker.v1 import broker_pb2
from drover.api.deployments.v1 import deployments_pb2
from drover.api.proxy.v1 import proxy_pb2
from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import evaluation_pb2, job_pb2

ISSUE_EXAMPLE = """
namespace:
  default: {policy: write}
  "*": {capabilities: [list-jobs, read-job]}
operator: {policy: read}
"""


def test_every_rpc_of_every_service_is_in_the_table() -> None:
    methods = {f"/{svc.full_name}/{m.name}"
               for module in (state_pb2, broker_pb2, deployments_pb2, proxy_pb2, acl_pb2)
               for svc in module.DESCRIPTOR.services_by_name.values() for m in svc.methods}
    assert len(methods) > 40
    assert methods == set(TABLE), (methods ^ set(TABLE))


def test_every_namespace_rule_reads_fields_its_request_has() -> None:
    from google.protobuf import descriptor_pool, message_factory

    from drover.acl.table import request_namespaces
    for method, req in TABLE.items():
        if req.kind != "namespace":
            continue
        _, service, name = method.split("/")
        m = descriptor_pool.Default().FindServiceByName(service).methods_by_name[name]
        empty = message_factory.GetMessageClass(m.input_type)()
        want = {"*"} if req.empty_is_all else {"default"}
        assert request_namespaces(req, empty) == want, method
        assert request_namespaces(req, object()) == {"default"}  # undecodable


def test_the_issue_example_parses_and_means_what_it_says() -> None:
    acl = Acl.compile([parse_policy("dev", ISSUE_EXAMPLE)])
    assert acl.allow_namespace("default", "submit-job")
    assert acl.allow_namespace("prod", "list-jobs") and acl.allow_namespace("prod", "read-job")
    assert not acl.allow_namespace("prod", "submit-job")
    assert acl.allow_global("operator", Level.READ)
    assert not acl.allow_global("operator", Level.WRITE)
    assert not acl.allow_global("scheduler", Level.READ)  # default deny


NOMAD_POLICY = """
namespace:
  default:
    policy: read
    capabilities: [submit-job, dispatch-job, read-logs, alloc-exec]
  scaler: {policy: scale}
  "csi-*": {capabilities: [csi-list-volume, csi-mount-volume, host-volume-read]}
agent: {policy: read}
node: {policy: read}
quota: {policy: deny}
plugin: {policy: read}
"""


def test_a_nomad_policy_carries_over_with_nomads_names() -> None:
    """Nomad's capabilities, shorthands (read, write, scale) and global rules
    parse; the ones drover asks for mean what they mean in Nomad; each one
    naming an object drover has not is named in a warning."""
    p = parse_policy("nomad", NOMAD_POLICY)
    assert [w.split("'")[1] for w in p.warnings] == [
        "dispatch-job", "read-logs", "alloc-exec", "csi-list-volume", "csi-mount-volume",
        "host-volume-read"]
    assert all("grants nothing in drover" in w for w in p.warnings)
    acl = Acl.compile([p])
    assert acl.allow_namespace("default", "submit-job") and acl.allow_namespace("default",
                                                                               "list-jobs")
    assert acl.allow_namespace("scaler", "read-job")  # scale = read-job, scale-job, ...
    assert not acl.allow_namespace("scaler", "submit-job")
    assert not acl.allow_namespace("csi-a", "read-job")
    write = Acl.compile([parse_policy("w", "namespace: {x: {policy: write}}")])
    assert all(write.allow_namespace("x", c) for c in
               ("list-jobs", "parse-job", "read-job", "submit-job", "dispatch-job", "scale-job"))
    assert not write.allow_namespace("x", "alloc-node-exec")  # not in Nomad's write either


def test_deprecated_drover_names_read_as_nomads_with_a_warning() -> None:
    p = parse_policy("old", "namespace: {'*': {capabilities: [list-evals, deployment-write]}}")
    acl = Acl.compile([p])
    assert acl.allow_namespace("prod", "read-job") and acl.allow_namespace("prod", "submit-job")
    assert [w.split(":")[1].strip() for w in p.warnings] == [
        "'list-evals' is deprecated; it is read as Nomad's 'read-job'",
        "'deployment-write' is deprecated; it is read as Nomad's 'submit-job'"]


def test_json_is_accepted_too() -> None:
    p = parse_policy("j", '{"namespace": {"*": {"policy": "read"}}, "node": {"policy": "write"}}')
    acl = Acl.compile([p])
    assert acl.allow_namespace("anything", "list-jobs") and acl.allow_global("node", Level.WRITE)


@pytest.mark.parametrize(("doc", "fragment"), [
    ("namespace: {default: {policy: admin}}", "namespace.default.policy must be read, write"),
    ("namespace: {default: {capabilities: [read-jobs]}}", "unknown capability 'read-jobs'"),
    ("namespace: {default: {}}", "give a policy or at least one capability"),
    ("namespace: {default: {polcy: read}}", "unknown key(s) ['polcy']"),
    ("namespace: {'a/b': {policy: read}}", "namespace glob 'a/b'"),
    ("operator: write", "operator must be {policy: read|write|deny}"),
    ("node: {policy: admin}", "node: policy must be read, write or deny"),
    ("agent: {policy: admin}", "agent: policy must be read, write or deny"),
    ("sentinel: {policy: read}", "unknown rule(s) ['sentinel']"),
    ("namespace: [", "not valid YAML or JSON at line"),
    ("- a list", "must be a mapping of rules"),
])
def test_bad_documents_are_refused_with_a_clear_message(doc: str, fragment: str) -> None:
    with pytest.raises(InvalidPolicy) as err:
        parse_policy("p", doc)
    assert fragment in err.value.message
    assert err.value.reason == "INVALID_POLICY"


def test_bad_policy_names_are_refused() -> None:
    for name in ("", "a b", "x" * 200, "../etc"):
        with pytest.raises(InvalidPolicy):
            parse_policy(name, "")


def test_deny_wins_when_merging_and_closest_glob_governs() -> None:
    writer = parse_policy("w", "namespace: {'prod-*': {policy: write}, '*': {policy: read}}")
    denier = parse_policy("d", "namespace: {'prod-*': {policy: deny}}\noperator: {policy: deny}")
    op = parse_policy("o", "operator: {policy: write}")
    acl = Acl.compile([writer, denier, op])
    assert not acl.allow_namespace("prod-eu", "read-job")  # deny wins for the glob
    assert acl.allow_namespace("dev", "read-job") and not acl.allow_namespace("dev", "submit-job")
    assert not acl.allow_global("operator", Level.READ)  # deny beats write
    closest = Acl.compile([parse_policy("c", """
namespace:
  "*": {policy: deny}
  "team-*": {policy: read}
  "team-a": {policy: write}
""")])
    assert closest.allow_namespace("team-a", "submit-job")  # exact first
    assert closest.allow_namespace("team-b", "read-job")  # the closer glob, not "*"
    assert not closest.allow_namespace("other", "read-job")


def test_all_namespaces_needs_the_capability_under_every_glob() -> None:
    only_default = Acl.compile([parse_policy("a", "namespace: {default: {policy: read}}")])
    assert not only_default.allow_namespace("*", "read-job")
    star = Acl.compile([parse_policy("b", "namespace: {'*': {policy: read}}")])
    assert star.allow_namespace("*", "read-job")
    star_but_secret = Acl.compile([parse_policy("c", """
namespace: {'*': {policy: read}, secret: {policy: deny}}""")])
    assert not star_but_secret.allow_namespace("*", "read-job")
    assert Acl(management=True).allow_namespace("*", "submit-job")


def _ident(kind: IdentityKind, doc: str = "") -> Identity:
    return Identity(kind, Acl.compile([parse_policy("p", doc)] if doc else []),
                    accessor_id="acc-1", name="t")


def test_authorize_by_requirement_kind() -> None:
    reg = state_pb2.RegisterJobRequest(job=job_pb2.Job(id="j", namespace="prod"))
    rd = _ident(IdentityKind.CLIENT, "namespace: {'*': {policy: read}}")
    wr = _ident(IdentityKind.CLIENT, "namespace: {prod: {policy: write}}")
    anon = _ident(IdentityKind.ANONYMOUS)
    mgmt = Identity(IdentityKind.MANAGEMENT, Acl(management=True), "acc-m")
    server = Identity(IdentityKind.SERVER, Acl(management=True))
    m = "/drover.state.v1.StateService/RegisterJob"
    authorize(wr, TABLE[m], reg, m)
    authorize(mgmt, TABLE[m], reg, m)
    for who in (rd, anon):
        with pytest.raises(PermissionDenied) as err:
            authorize(who, TABLE[m], reg, m)
        assert "register-job (or submit-job)" in err.value.message and "'prod'" in err.value.message
    up = "/drover.state.v1.StateService/UpdateDeployment"
    with pytest.raises(PermissionDenied):
        authorize(mgmt, TABLE[up], state_pb2.UpdateDeploymentRequest(), up)
    authorize(server, TABLE[up], state_pb2.UpdateDeploymentRequest(), up)
    delete = "/drover.state.v1.StateService/DeleteEvaluations"
    with pytest.raises(PermissionDenied):
        authorize(wr, TABLE[delete], state_pb2.DeleteEvaluationsRequest(), delete)
    upsert = "/drover.state.v1.StateService/UpsertEvaluations"
    evs = state_pb2.UpsertEvaluationsRequest(evaluations=[
        evaluation_pb2.Evaluation(id="a", namespace="prod"),
        evaluation_pb2.Evaluation(id="b", namespace="other")])
    with pytest.raises(PermissionDenied) as err:  # every namespace named counts
        authorize(wr, TABLE[upsert], evs, upsert)
    assert "'other'" in err.value.message
    get = "/drover.state.v1.StateService/GetEvaluation"
    with pytest.raises(PermissionDenied):  # empty namespace: search all
        authorize(wr, TABLE[get], state_pb2.GetEvaluationRequest(id="x"), get)
    authorize(rd, TABLE[get], state_pb2.GetEvaluationRequest(id="x"), get)
    boot = "/drover.acl.v1.AclService/Bootstrap"
    authorize(anon, TABLE[boot], acl_pb2.BootstrapRequest(), boot)
    me = "/drover.acl.v1.AclService/GetSelfToken"
    authorize(rd, TABLE[me], acl_pb2.GetSelfTokenRequest(), me)
    with pytest.raises(PermissionDenied):
        authorize(anon, TABLE[me], acl_pb2.GetSelfTokenRequest(), me)


def _stored(accessor: str, secret: str, kind: acl_pb2.TokenType, policies: list[str]) -> bytes:
    return acl_pb2.StoredToken(
        token=acl_pb2.Token(accessor_id=accessor, name=accessor, type=kind, policies=policies),
        secret_sha256=hash_secret(secret)).SerializeToString()


def test_state_resolves_tokens_anonymous_and_server_and_forgets_revoked() -> None:
    keys = AclKeys("/drover/v1/")
    srv = server_secret(b"k" * 32)
    state = AclState(keys, srv)
    assert state.resolve(None).kind is IdentityKind.ANONYMOUS
    assert not state.resolve(None).acl.allow_namespace("default", "read-job")  # default deny
    state.put(keys.policy("anonymous"), acl_pb2.Policy(
        name="anonymous", rules="namespace: {default: {policy: read}}").SerializeToString())
    assert state.resolve(None).acl.allow_namespace("default", "read-job")
    state.put(keys.token("a1"), _stored("a1", "s1", acl_pb2.TOKEN_TYPE_CLIENT, ["anonymous"]))
    state.put(keys.token("m1"), _stored("m1", "s2", acl_pb2.TOKEN_TYPE_MANAGEMENT, []))
    assert state.resolve("s1").kind is IdentityKind.CLIENT
    assert state.resolve("s2").kind is IdentityKind.MANAGEMENT
    assert state.resolve(srv).kind is IdentityKind.SERVER
    state.delete(keys.token("a1"))
    with pytest.raises(Unauthenticated) as err:
        state.resolve("s1")
    assert "s1" not in err.value.message
    state.delete(keys.policy("anonymous"))
    assert not state.resolve(None).acl.allow_namespace("default", "read-job")


def test_bearer_parsing() -> None:
    assert parse_bearer("Bearer abc") == "abc"
    assert parse_bearer("bearer  abc ") == "abc"
    for bad in ("abc", "Basic abc", "Bearer ", "Bearer " + "x" * 500):
        with pytest.raises(Unauthenticated) as err:
            parse_bearer(bad)
        assert "abc" not in err.value.message
