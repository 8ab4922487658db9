"""The AclService's writes through the one ``transact`` policy, on a state
service over MemoryKV: bootstrap once under a race, a conflict re-planned
on a fresh read that names its cause, every write compared."""

from __future__ import annotations

import asyncio

import pytest

from drover.acl import AclAlreadyBootstrapped, Identity, IdentityKind
from drover.acl.acl import Acl
from drover.api.acl.v1 import acl_pb2
from drover.coord.kv import Delete
from drover.errors import NotFound
from drover.rpc import acl as rpc_acl
from drover.state.acl.admin import AclAdmin
from drover.state.acl.core import acl
from drover.state.acl.core.acl import AclSnapshot
from drover.state.app import StateService
from drover.state.core.plan import WritePlan
from drover.state.errors import AclDisabled
from drover.state.pipeline import transact_on


def admin(service: StateService) -> AclAdmin:
    """The service's AclAdmin, called as a management token would."""
    rpc_acl._IDENTITY.set(Identity(IdentityKind.MANAGEMENT, Acl(management=True), "m", "m"))
    assert service.acl_admin is not None
    return service.acl_admin


async def test_of_two_concurrent_bootstraps_exactly_one_wins(service: StateService) -> None:
    a = admin(service)
    got = await asyncio.gather(a.bootstrap(acl_pb2.BootstrapRequest()),
                               a.bootstrap(acl_pb2.BootstrapRequest()),
                               return_exceptions=True)
    won = [g for g in got if isinstance(g, acl_pb2.BootstrapResponse)]
    lost = [g for g in got if isinstance(g, AclAlreadyBootstrapped)]
    assert (len(won), len(lost)) == (1, 1), got
    tokens = (await a.list_tokens(acl_pb2.ListTokensRequest())).tokens
    assert [t.accessor_id for t in tokens] == [won[0].token.accessor_id]
    with pytest.raises(AclAlreadyBootstrapped):
        await a.bootstrap(acl_pb2.BootstrapRequest())


async def test_a_policy_deleted_under_create_token_is_named_on_the_replan(
        service: StateService, monkeypatch: pytest.MonkeyPatch) -> None:
    a = admin(service)
    await a.apply_policy(acl_pb2.ApplyPolicyRequest(name="p", rules="node: {policy: read}"))
    read = a._read
    reads: list[tuple[str, ...]] = []

    async def racing(keys: tuple[str, ...]) -> AclSnapshot:
        snapshot = await read(keys)
        reads.append(keys)
        if len(reads) == 1:  # deleted after the planner's read, before its txn
            await a.store.txn([], [Delete(a.keys.policy("p").encode())])
        return snapshot
    monkeypatch.setattr(a, "_read", racing)
    with pytest.raises(NotFound) as err:
        await a.create_token(acl_pb2.CreateTokenRequest(name="t", policies=["p"]))
    assert err.value.metadata == {"policy": "p"}
    assert len(reads) == 2  # one conflict, one re-plan on a fresh read
    assert not (await a.list_tokens(acl_pb2.ListTokensRequest())).tokens


async def test_policies_and_tokens_round_trip_with_their_indexes(service: StateService) -> None:
    a = admin(service)
    req = acl_pb2.ApplyPolicyRequest(name="p", rules="node: {policy: read}")
    first_resp = await a.apply_policy(req)
    first = first_resp.policy
    assert not first_resp.warnings
    again = (await a.apply_policy(req)).policy
    old_names = await a.apply_policy(acl_pb2.ApplyPolicyRequest(
        name="old", rules="namespace: {a: {capabilities: [list-evals]}}"))
    assert len(old_names.warnings) == 1 and "'read-job'" in old_names.warnings[0]
    assert first.create_index == first.modify_index == again.create_index
    assert again.modify_index > first.modify_index
    tok = await a.create_token(acl_pb2.CreateTokenRequest(name="t", policies=["p"]))
    assert tok.token.create_index > again.modify_index and tok.secret_id
    # Deleting a policy a token names is allowed; the token keeps the name.
    await a.delete_policy(acl_pb2.DeletePolicyRequest(name="p"))
    with pytest.raises(NotFound):
        await a.delete_policy(acl_pb2.DeletePolicyRequest(name="p"))
    listed = (await a.list_tokens(acl_pb2.ListTokensRequest())).tokens
    assert [list(t.policies) for t in listed] == [["p"]]
    revoke = acl_pb2.RevokeTokenRequest(accessor_id=tok.token.accessor_id)
    await a.revoke_token(revoke)
    with pytest.raises(NotFound):
        await a.revoke_token(revoke)
    assert not (await a.list_tokens(acl_pb2.ListTokensRequest())).tokens


async def test_with_acls_off_every_write_is_refused(service: StateService) -> None:
    assert service.acl_admin is not None
    rpc_acl._IDENTITY.set(None)
    with pytest.raises(AclDisabled):
        await service.acl_admin.bootstrap(acl_pb2.BootstrapRequest())


def _acl_event(a: AclAdmin, key: bytes, deleted: bool) -> tuple[str, str, str, str] | None:
    """The plan event a watched ACL key is (None: not an ACL object)."""
    k = key.decode()
    for kind, prefix in ((acl.TOKEN, a.keys.token("")), (acl.POLICY, a.keys.policy(""))):
        if k.startswith(prefix):
            return kind, "", k.removeprefix(prefix), "delete" if deleted else "put"
    if k == a.keys.bootstrap:
        return acl.BOOTSTRAP, "", "bootstrap", "delete" if deleted else "put"
    return None


@pytest.mark.parametrize("which", ["bootstrap", "policy", "token", "revoke", "delete-policy"])
async def test_an_acl_plans_events_are_the_changes_its_txn_makes(
        service: StateService, which: str) -> None:
    a = admin(service)
    await a.apply_policy(acl_pb2.ApplyPolicyRequest(name="p", rules="node: {policy: read}"))
    tok = await a.create_token(acl_pb2.CreateTokenRequest(name="t", policies=["p"]))
    c = a._context()
    write = {
        "bootstrap": lambda: acl.bootstrap(c),
        "policy": lambda: acl.apply_policy(c, "q", "", "node: {policy: read}"),
        "token": lambda: acl.create_token(c, acl.token_request("u", 0, ["p"])),
        "revoke": lambda: acl.revoke_token(c, tok.token.accessor_id),
        "delete-policy": lambda: acl.delete_policy(c, "p"),
    }[which]()
    plans: list[WritePlan] = []

    def planner(view: AclSnapshot) -> WritePlan:
        plans.append(write.plan(view))
        return plans[-1]

    async def views(fresh: bool) -> AclSnapshot:
        return await a._read(write.reads)

    await transact_on(views, a.writer, planner)
    rev = await a.store.revision()
    base = a.keys.prefix.encode()
    watch = await a.store.watch(base, base[:-1] + b"0", rev)
    try:
        batch = await anext(aiter(watch))
    finally:
        await watch.close()
    changes = [_acl_event(a, ev.kv.key, ev.deleted) for ev in batch.events]
    assert [(e.kind, e.namespace, e.id, e.op) for e in plans[-1].events] == changes
