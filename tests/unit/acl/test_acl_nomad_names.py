"""Nomad's current capability names (acl/policy.go) carry over with Nomad's
meaning: each fine-grained job/deployment capability grants its own RPC, and
``submit-job`` implies them all (Nomad's endpoints check
``AllowNsOpAnyOf(ns, submit-job, <fine>)``); ``node_pool`` and ``host_volume``
blocks (Nomad's ``Parse``) are accepted and ignored with a warning."""

from __future__ import annotations

import pytest

from drover.acl.acl import Acl
from drover.acl.errors import InvalidPolicy
from drover.acl.policy import SUBMIT_JOB_IMPLIES, parse_policy
from drover.acl.table import TABLE

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
        _S + "RegisterJob": "register-job", _S + "DeregisterJob": "deregister-job",
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
