"""The ACL down policy: the pure freshness core (virtual clock), the proof
rule, and the interceptor's decisions on a stale view."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from virtual_clock import VirtualClock

from drover.acl import AclKeys, AclState, hash_secret, server_secret
from drover.acl.errors import AclDataStale, PermissionDenied, Unauthenticated
from drover.acl.freshness import Freshness, proves_current
from drover.api.acl.v1 import acl_pb2
from drover.api.state.v1 import state_pb2
from drover.config import AclSettings
from drover.errors import Kind
from drover.rpc.acl import AclInterceptor

KEYS = AclKeys("/drover/v1/")
READER = "namespace:\n  default: {policy: read}\n"
_S = "/drover.state.v1.StateService/"
_A = "/drover.acl.v1.AclService/"


# -- the proof rule -----------------------------------------------------------

@pytest.mark.parametrize(("applied", "view_keys", "read_revision", "newest", "count", "proven"), [
    # the view applied every revision the read saw
    (100, 3, 100, 90, 3, True),
    (120, 3, 100, 90, 9, True),
    # nothing under the prefix changed since the view's revision (idle ACLs)
    (50, 3, 100, 40, 3, True),
    (50, 0, 100, 0, 0, True),
    # a put after the view's revision: a token created or changed is missing
    (50, 3, 100, 60, 3, False),
    (50, 3, 100, 60, 4, False),
    # a delete after the view's revision: the view holds a revoked token
    (50, 3, 100, 40, 2, False),
    # both: a delete and a create after it leave the count equal, not newest
    (50, 3, 100, 70, 3, False),
    # the last key deleted: nothing newer, one key fewer
    (50, 1, 100, 0, 0, False),
])
def test_a_read_proves_the_view_current_only_if_it_held_every_change(
        applied: int, view_keys: int, read_revision: int, newest: int, count: int,
        proven: bool) -> None:
    assert proves_current(applied=applied, view_keys=view_keys, read_revision=read_revision,
                          newest=newest, count=count) is proven


# -- the freshness core -------------------------------------------------------

def test_stale_strictly_past_the_bound_and_refused_with_an_actionable_error(
        clock: VirtualClock) -> None:
    f = Freshness(AclSettings(max_stale=30.0), clock)
    f.mark_current(clock())
    clock.advance(30.0)
    assert not f.stale and f.refusal() is None  # at the bound: still fresh
    clock.advance(0.5)
    assert f.stale and f.staleness() == pytest.approx(30.5)
    err = f.refusal()
    assert isinstance(err, AclDataStale)
    assert err.kind is Kind.UNAVAILABLE and err.reason == "ACL_DATA_STALE"
    # A person can act on it: what is wrong, since when, and the fix.
    assert "30s ago" in err.message and "bound 30s" in err.message
    assert "etcd" in err.message and "--acl-down-policy=extend-cache" in err.message
    assert err.metadata == {"staleness_seconds": "30.5", "max_stale_seconds": "30"}


def test_a_new_proof_recovers_and_a_late_older_proof_never_moves_the_mark_back(
        clock: VirtualClock) -> None:
    f = Freshness(AclSettings(max_stale=10.0), clock)
    f.mark_current(0.0)
    clock.advance(25.0)
    assert f.refusal() is not None
    f.mark_current(24.0)  # a read begun at 24 s proved it
    assert f.refusal() is None and f.staleness() == pytest.approx(1.0)
    f.mark_current(3.0)  # an overlapping older read answering late
    assert f.current_at == 24.0


def test_never_proven_counts_from_construction(clock: VirtualClock) -> None:
    clock.advance(100.0)
    f = Freshness(AclSettings(max_stale=5.0), clock)
    assert f.current_at is None and f.staleness() == 0.0
    clock.advance(6.0)
    assert f.stale and f.refusal() is not None


def test_extend_cache_judges_with_the_stale_view(clock: VirtualClock) -> None:
    f = Freshness(AclSettings(max_stale=5.0, down_policy="extend-cache"), clock)
    clock.advance(60.0)
    assert f.stale and f.extends_cache
    assert f.refusal() is None


def test_settings_refuse_what_cannot_work() -> None:
    with pytest.raises(ValueError, match="down policy"):
        AclSettings(down_policy="allow")
    with pytest.raises(ValueError, match="positive"):
        AclSettings(max_stale=0)
    s = AclSettings()
    assert (s.max_stale, s.down_policy) == (30.0, "deny")
    # A healthy etcd gets proofs in well before the bound.
    assert s.check_interval + s.check_timeout < s.max_stale


# -- the interceptor on a stale view -------------------------------------------

class _Source:
    def __init__(self, clock: VirtualClock, settings: AclSettings) -> None:
        self.state = AclState(KEYS, server_secret(b"cluster"))
        self.ready = asyncio.Event()
        self.ready.set()
        self.freshness = Freshness(settings, clock)
        self.freshness.mark_current(clock())
        self.catch_ups = 0

    async def catch_up(self, within: float = 1.0) -> bool:
        self.catch_ups += 1
        return True


class _Context:
    def __init__(self, secret: str) -> None:
        self.secret = secret

    def invocation_metadata(self) -> Any:
        return (("authorization", f"Bearer {self.secret}"),) if self.secret else ()


def _source(clock: VirtualClock, policy: str = "deny") -> _Source:
    src = _Source(clock, AclSettings(max_stale=30.0, down_policy=policy))
    src.state.put(KEYS.policy("reader"),
                  acl_pb2.Policy(name="reader", rules=READER).SerializeToString())
    for accessor, kind in (("r", acl_pb2.TOKEN_TYPE_CLIENT),
                           ("m", acl_pb2.TOKEN_TYPE_MANAGEMENT)):
        src.state.put(KEYS.token(accessor), acl_pb2.StoredToken(
            token=acl_pb2.Token(accessor_id=accessor, type=kind, policies=["reader"]),
            secret_sha256=hash_secret(f"secret-{accessor}")).SerializeToString())
    return src


async def _check(src: _Source, method: str, secret: str, request: Any = None) -> None:
    icpt = AclInterceptor(src, ["drover.state.v1.StateService", "drover.acl.v1.AclService"])
    await icpt._check(method, request or state_pb2.ListJobsRequest(), _Context(secret))


async def test_a_stale_view_refuses_every_call_that_needs_a_capability(
        clock: VirtualClock) -> None:
    src = _source(clock)
    await _check(src, _S + "ListJobs", "secret-r")
    clock.advance(31.0)
    for secret in ("secret-r", "secret-m", ""):  # client, management, anonymous
        with pytest.raises(AclDataStale):
            await _check(src, _S + "ListJobs", secret)
    # An unknown token is not looked up in etcd (which is what is down).
    with pytest.raises(AclDataStale):
        await _check(src, _S + "ListJobs", "secret-unknown")
    assert src.catch_ups == 0
    # Neither the server identity nor Bootstrap depends on the view.
    await _check(src, _S + "UpdateEvaluations", server_secret(b"cluster"),
                 state_pb2.UpdateEvaluationsRequest())
    await _check(src, _A + "Bootstrap", "", acl_pb2.BootstrapRequest())
    # Recovery: the next proof serves again, with the same judgement as before.
    src.freshness.mark_current(clock())
    await _check(src, _S + "ListJobs", "secret-r")
    with pytest.raises(Unauthenticated):
        await _check(src, _S + "ListJobs", "secret-unknown")
    assert src.catch_ups == 1


async def test_extend_cache_keeps_judging_a_stale_view(clock: VirtualClock) -> None:
    src = _source(clock, "extend-cache")
    clock.advance(3600.0)
    await _check(src, _S + "ListJobs", "secret-r")
    with pytest.raises(PermissionDenied):  # still default deny for what it lacks
        await _check(src, _S + "RegisterJob", "secret-r", state_pb2.RegisterJobRequest())
