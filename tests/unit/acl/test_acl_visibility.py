"""A ``*`` read by a token that may read some namespaces is narrowed to
them (Nomad filters), never widened; writes and tokens without any right
are still refused (:mod:`drover.acl.visibility`)."""

from __future__ import annotations

import pytest

from drover.acl import Identity, IdentityKind, PermissionDenied
from drover.acl.acl import Acl
from drover.acl.policy import parse_policy
from drover.acl.table import TABLE, authorize
from drover.api.state.v1 import state_pb2

LIST = "/drover.state.v1.StateService/ListJobs"


def _client(rules: str) -> Identity:
    return Identity(IdentityKind.CLIENT, Acl.compile([parse_policy("p", rules)]), "acc", "t")


def test_a_star_read_is_narrowed_to_the_readable_namespaces() -> None:
    who = _client("namespace: {default: {policy: read}, 'team-*': {policy: read}, "
                  "team-secret: {policy: deny}}")
    seen = authorize(who, TABLE[LIST], state_pb2.ListJobsRequest(namespace="*"), LIST,
                     narrow=True)
    assert seen is not None
    assert [ns for ns in ("default", "team-a", "team-secret", "other", "*") if seen(ns)] == [
        "default", "team-a"]


def test_not_narrowed_refused_as_before() -> None:
    who = _client("namespace: {default: {policy: read}}")
    with pytest.raises(PermissionDenied):  # a write-shaped call (narrow=False)
        authorize(who, TABLE[LIST], state_pb2.ListJobsRequest(namespace="*"), LIST)
    nothing = _client("node: {policy: read}")
    with pytest.raises(PermissionDenied):  # may read no namespace at all
        authorize(nothing, TABLE[LIST], state_pb2.ListJobsRequest(namespace="*"), LIST,
                  narrow=True)


def test_a_token_allowed_everywhere_is_not_narrowed() -> None:
    who = _client("namespace: {'*': {policy: read}}")
    assert authorize(who, TABLE[LIST], state_pb2.ListJobsRequest(namespace="*"), LIST,
                     narrow=True) is None
    one = _client("namespace: {default: {policy: read}}")
    assert authorize(one, TABLE[LIST], state_pb2.ListJobsRequest(namespace="default"), LIST,
                     narrow=True) is None
