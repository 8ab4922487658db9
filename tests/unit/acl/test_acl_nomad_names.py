"""Nomad's current capability names (acl/policy.go) carry over with Nomad's
meaning: each fine-grained job/deployment capability grants its own RPC, and
``submit-job`` implies them all (Nomad's endpoints check
``AllowNsOpAnyOf(ns, submit-job, <fine>)``); ``node_pool`` and ``host_volume``
blocks (Nomad's ``Parse``) are accepted and ignored with a warning."""

from __future__ import annotations

import pytest

from drover.acl.acl import Acl, Identity, IdentityKind
from drover.acl.errors import InvalidPolicy, PermissionDenied
from drover.acl.policy import (
    NAMESPACE_CAPABILITIES,
    NO_OBJECT,
    SUBMIT_JOB_IMPLIES,
    parse_policy,
)
from drover.acl.table import TABLE, authorize
from drover.api.state.v1 import state_pb2

_S = "/drover.state.v1.StateService/"
_D = "/drover.deployments.v1.DeploymentWatcherService/"

NOMAD_FINE = ("register-job", "revert-job", "deregister-job", "plan-job", "evaluate-job",
              "promote-deployment", "pause-deployment", "fail-deployment",
              "set-alloc-health-deployment")


@pytest.mark.parametrize("cap", NOMAD_FINE)
def test_each_fine_name_is_accepted_and_grants_only_itself(cap: str) -> None:
    acl = Acl.compile([parse_policy("p", f"namespace: {{default: {{capabilities: [{cap}]}}}}")])
    assert acl.allow_namespace("default", cap)
    assert not acl.allow_namespace("default", "submit-job")
    others = [c for c in NOMAD_FINE if c != cap]
    assert not any(acl.allow_namespace("default", c) for c in others)


def test_submit_job_and_write_imply_every_fine_name() -> None:
    assert set(NOMAD_FINE) <= SUBMIT_JOB_IMPLIES
    for doc in ("namespace: {default: {capabilities: [submit-job]}}",
                "namespace: {default: {policy: write}}"):
        acl = Acl.compile([parse_policy("p", doc)])
        assert all(acl.allow_namespace("default", c) for c in NOMAD_FINE), doc
    read = Acl.compile([parse_policy("p", "namespace: {default: {policy: read}}")])
    assert not any(read.allow_namespace("default", c) for c in NOMAD_FINE)


def test_deny_still_wins_over_submit_job() -> None:
    acl = Acl.compile([parse_policy("p", "namespace: {default: {capabilities: "
                                         "[submit-job, deny]}}")])
    assert not acl.allow_namespace("default", "register-job")


def test_the_rpcs_ask_for_nomads_fine_names() -> None:
    assert {m: TABLE[m].capability for m in (
        _S + "RegisterJob", _S + "DeregisterJob", _S + "RevertJob", _S + "PlanJob",
        _S + "UpsertEvaluations", _S + "StartJob", _D + "PromoteDeployment",
        _D + "PauseDeployment", _D + "FailDeployment", _D + "SetAllocHealth")} == {
        _S + "RegisterJob": "register-job", _S + "DeregisterJob": "deregister-job",  # purge: below
        _S + "RevertJob": "revert-job", _S + "PlanJob": "plan-job",
        _S + "UpsertEvaluations": "evaluate-job", _S + "StartJob": "register-job",
        _D + "PromoteDeployment": "promote-deployment",
        _D + "PauseDeployment": "pause-deployment", _D + "FailDeployment": "fail-deployment",
        _D + "SetAllocHealth": "set-alloc-health-deployment"}


def test_node_pool_and_host_volume_blocks_are_ignored_with_a_warning() -> None:
    p = parse_policy("p", "node_pool: {'*': {policy: read}}\n"
                          "host_volume: {'*': {policy: write}}\n"
                          "namespace: {default: {policy: read}}")
    assert [w.split(":")[0] for w in p.warnings] == ["node_pool", "host_volume"]
    assert "ignored" in p.warnings[0]
    assert [r.glob for r in p.namespaces] == ["default"]


def test_an_unknown_block_is_still_refused() -> None:
    with pytest.raises(InvalidPolicy, match="unknown rule"):
        parse_policy("p", "node_pools: {'*': {policy: read}}")


#: Every capability Nomad's acl/policy.go accepts (isNamespaceCapabilityValid,
#: enterprise ones included), as of Nomad 1.10.
NOMAD_NAMESPACE_CAPABILITIES = frozenset({
    "deny", "list-jobs", "parse-job", "read-job", "submit-job", "dispatch-job", "read-logs",
    "read-fs", "alloc-exec", "alloc-node-exec", "alloc-lifecycle", "csi-register-plugin",
    "csi-write-volume", "csi-read-volume", "csi-list-volume", "csi-mount-volume",
    "host-volume-create", "host-volume-register", "host-volume-read", "host-volume-write",
    "host-volume-delete", "list-scaling-policies", "read-scaling-policy", "read-job-scaling",
    "scale-job", "register-job", "revert-job", "deregister-job", "purge-job", "evaluate-job",
    "plan-job", "tag-job-version", "stable-job", "fail-deployment", "pause-deployment",
    "promote-deployment", "unblock-deployment", "cancel-deployment",
    "set-alloc-health-deployment", "gc-allocation", "pause-allocation", "force-periodic-job",
    "delete-service-registration", "sentinel-override", "submit-recommendation",
})


def test_every_nomad_capability_parses_and_those_without_an_object_warn() -> None:
    assert set(NAMESPACE_CAPABILITIES) == NOMAD_NAMESPACE_CAPABILITIES
    caps = ", ".join(sorted(NOMAD_NAMESPACE_CAPABILITIES - {"deny"}))
    p = parse_policy("p", f"namespace: {{default: {{capabilities: [{caps}]}}}}")
    warned = {w.split("'")[1] for w in p.warnings}
    assert warned == NO_OBJECT


def test_no_object_is_exactly_what_no_rpc_asks_for() -> None:
    """The warning list and the ACL table cannot drift: a capability warns
    iff no RPC (nor the event stream's read-job) asks for it, nor
    ``submit-job`` (implying the fine names) or ``deny``."""
    asked = {r.capability for r in TABLE.values() if r.kind == "namespace"}
    asked |= {r.flagged for r in TABLE.values() if r.flagged}
    asked |= {"read-job", "submit-job", "deny"}
    assert NO_OBJECT == set(NAMESPACE_CAPABILITIES) - asked


def test_a_namespace_rules_variables_block_is_ignored_with_a_warning() -> None:
    p = parse_policy("p", "namespace: {default: {policy: read, variables: "
                          "{path: {'*': {capabilities: [read]}}}}}")
    assert p.warnings and p.warnings[0].startswith("namespace.default.variables: ignored")
    assert Acl.compile([p]).allow_namespace("default", "read-job")


def _may_deregister(caps: str, purge: bool) -> bool:
    policy = parse_policy("p", f"namespace: {{default: {{capabilities: [{caps}]}}}}")
    who = Identity(IdentityKind.CLIENT, Acl.compile([policy]), "acc-t")
    m = _S + "DeregisterJob"
    try:
        authorize(who, TABLE[m], state_pb2.DeregisterJobRequest(id="j", purge=purge), m)
    except PermissionDenied as err:
        assert ("purge-job" if purge else "deregister-job") in err.message
        return False
    return True


@pytest.mark.parametrize(("caps", "stop", "purge"), [
    ("deregister-job", True, False),
    ("purge-job", True, True),
    ("submit-job", True, True),
    ("read-job", False, False),
])
def test_purge_needs_purge_job_as_nomads_job_deregister(caps: str, stop: bool,
                                                        purge: bool) -> None:
    """Nomad's ``Job.Deregister``: ``AllowNsOpAnyOf(submit-job, purge-job)``
    with purge, and also ``deregister-job`` without. Was: deregister-job for
    both (a purge-job token could not purge; a deregister-job one could)."""
    assert _may_deregister(caps, purge=False) is stop
    assert _may_deregister(caps, purge=True) is purge
