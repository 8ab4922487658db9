"""The ACL planners and rules on plain data (no etcd, no asyncio): what each
write compares, writes and answers, and its refusals by cause."""

from __future__ import annotations

import itertools

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from drover.acl import AclAlreadyBootstrapped, AclKeys, InvalidPolicy, hash_secret
from drover.api.acl.v1 import acl_pb2
from drover.coord.kv import Compare, Delete, Put
from drover.errors import InvalidArgument, NotFound
from drover.state.acl.core import acl
from drover.state.acl.core.acl import AclEntry, AclSnapshot
from drover.state.core.plan import Event

KEYS = AclKeys("/t/drover/v1/")
NOW = Timestamp(seconds=1_700_000_000)


def ctx() -> acl.AclContext:
    counter = itertools.count(1)
    return acl.AclContext(KEYS, NOW, lambda: f"id-{next(counter)}")


def policy_entry(name: str, create: int, mod: int) -> AclEntry:
    return AclEntry(acl_pb2.Policy(name=name, rules="").SerializeToString(), mod, create)


def snap(entries: dict[str, AclEntry | None], revision: int = 50) -> AclSnapshot:
    return AclSnapshot(revision, entries)


def b(key: str) -> bytes:
    return key.encode()


def test_bootstrap_creates_marker_and_management_token_compared_absent() -> None:
    write = acl.bootstrap(ctx())
    assert write.reads == (KEYS.bootstrap,)
    plan = write.plan(snap({KEYS.bootstrap: None}))
    token_key = b(KEYS.token("id-1"))
    assert plan.compares == (Compare(b(KEYS.bootstrap), "create", 0),
                             Compare(token_key, "create", 0))
    assert plan.ops[0] == Put(b(KEYS.bootstrap), b"id-1")
    assert isinstance(plan.ops[1], Put) and plan.ops[1].key == token_key
    stored = acl_pb2.StoredToken.FromString(plan.ops[1].value)
    assert stored.token.type == acl_pb2.TOKEN_TYPE_MANAGEMENT
    assert stored.secret_sha256 == hash_secret("id-2")
    assert b"id-2" not in plan.ops[1].value  # the secret is never stored
    assert plan.events == (Event(acl.BOOTSTRAP, "", "bootstrap", "put"),
                           Event(acl.TOKEN, "", "id-1", "put"))
    resp = plan.respond(77)
    assert (resp.secret_id, resp.token.accessor_id, resp.token.create_index) == ("id-2", "id-1",
                                                                                  77)
    assert resp.token.create_time == NOW


def test_bootstrap_only_once() -> None:
    marker = AclEntry(b"id-9", 5, 5)
    with pytest.raises(AclAlreadyBootstrapped) as err:
        acl.bootstrap(ctx()).plan(snap({KEYS.bootstrap: marker}))
    assert err.value.reason == "ACL_ALREADY_BOOTSTRAPPED"


def test_apply_policy_creates_absent_or_replaces_the_revision_read() -> None:
    key = KEYS.policy("ops")
    new = acl.apply_policy(ctx(), "ops", "d", "node: {policy: read}")
    assert new.reads == (key,)
    plan = new.plan(snap({key: None}))
    assert plan.compares == (Compare(b(key), "mod", 0),)
    assert plan.ops == (Put(b(key), acl_pb2.Policy(
        name="ops", description="d", rules="node: {policy: read}").SerializeToString()),)
    got = plan.respond(60).policy
    assert (got.create_index, got.modify_index) == (60, 60)

    plan = new.plan(snap({key: policy_entry("ops", 10, 20)}))
    assert plan.compares == (Compare(b(key), "mod", 20),)
    got = plan.respond(61).policy
    assert (got.name, got.create_index, got.modify_index) == ("ops", 10, 61)


def test_delete_policy_needs_it_and_ignores_tokens_naming_it() -> None:
    key = KEYS.policy("ops")
    with pytest.raises(NotFound) as err:
        acl.delete_policy(ctx(), "ops").plan(snap({key: None}))
    assert err.value.reason == "NOT_FOUND"
    # Only the policy is read: a token naming it does not stop the delete.
    plan = acl.delete_policy(ctx(), "ops").plan(snap({key: policy_entry("ops", 10, 20)}))
    assert plan.compares == (Compare(b(key), "mod", 20),)
    assert plan.ops == (Delete(b(key)),)
    assert plan.events == (Event(acl.POLICY, "", "ops", "delete"),)


def test_a_tokens_policies_must_exist_and_are_compared_on_their_create_revision() -> None:
    req = acl.token_request(" ci ", 0, ["a", "b", "a"])
    assert req == acl.TokenRequest("ci", acl_pb2.TOKEN_TYPE_CLIENT, ("a", "b"))
    write = acl.create_token(ctx(), req)
    assert write.reads == (KEYS.policy("a"), KEYS.policy("b"))
    with pytest.raises(NotFound) as err:
        write.plan(snap({KEYS.policy("a"): policy_entry("a", 3, 4), KEYS.policy("b"): None}))
    assert err.value.metadata == {"policy": "b"}
    assert "apply it first" in err.value.message

    plan = write.plan(snap({KEYS.policy("a"): policy_entry("a", 3, 4),
                            KEYS.policy("b"): policy_entry("b", 7, 9)}))
    token_key = b(KEYS.token("id-1"))
    assert plan.compares == (Compare(b(KEYS.policy("a")), "create", 3),
                             Compare(b(KEYS.policy("b")), "create", 7),
                             Compare(token_key, "create", 0))
    assert len(plan.ops) == 1 and plan.ops[0].key == token_key
    stored = acl_pb2.StoredToken.FromString(plan.ops[0].value)  # type: ignore[union-attr]
    assert list(stored.token.policies) == ["a", "b"]
    assert stored.secret_sha256 == hash_secret("id-2")
    resp = plan.respond(90)
    assert (resp.secret_id, resp.token.create_index, resp.token.name) == ("id-2", 90, "ci")


@pytest.mark.parametrize(("name", "kind", "policies", "field"), [
    ("", 0, ["a"], "name"),
    ("x" * 257, 0, ["a"], "name"),
    ("t", 7, ["a"], "type"),
    ("t", acl_pb2.TOKEN_TYPE_MANAGEMENT, ["a"], "policies"),
    ("t", acl_pb2.TOKEN_TYPE_CLIENT, [], "policies"),
    ("t", 0, [f"p{i}" for i in range(65)], "policies"),
])
def test_token_requests_are_validated_by_field(name: str, kind: int, policies: list[str],
                                               field: str) -> None:
    with pytest.raises(InvalidArgument) as err:
        acl.token_request(name, kind, policies)
    assert err.value.metadata == {"field": field}


def test_token_policy_names_are_validated_before_any_read() -> None:
    with pytest.raises(InvalidPolicy):
        acl.token_request("t", 0, ["ok", "not ok!"])
    mgmt = acl.token_request("root", acl_pb2.TOKEN_TYPE_MANAGEMENT, [])
    plan = acl.create_token(ctx(), mgmt).plan(snap({}))  # reads nothing
    assert plan.compares == (Compare(b(KEYS.token("id-1")), "create", 0),)


def test_revoke_token_needs_it_and_compares_the_revision_read() -> None:
    key = KEYS.token("acc")
    with pytest.raises(NotFound):
        acl.revoke_token(ctx(), "acc").plan(snap({key: None}))
    plan = acl.revoke_token(ctx(), "acc").plan(snap({key: AclEntry(b"", 30, 12)}))
    assert plan.compares == (Compare(b(key), "mod", 30),)
    assert plan.ops == (Delete(b(key)),)
    assert plan.events == (Event(acl.TOKEN, "", "acc", "delete"),)


@pytest.mark.parametrize("accessor", ["", "x" * 65, "a/b"])
def test_an_accessor_id_is_bounded_and_one_key(accessor: str) -> None:
    with pytest.raises(InvalidArgument) as err:
        acl.check_accessor(accessor)
    assert err.value.metadata == {"field": "accessor_id"}


def test_a_description_is_bounded() -> None:
    acl.check_description("d" * 1024)
    with pytest.raises(InvalidArgument):
        acl.check_description("d" * 1025)


def test_a_planner_reads_only_the_keys_its_write_declared() -> None:
    with pytest.raises(LookupError):
        acl.delete_policy(ctx(), "ops").plan(snap({}))
