"""The convergence barrier's pure calculation."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from drover.proxy.core.convergence import ReplicaRevision, convergence
from drover.proxy.errors import DuplicateReplica, InvalidRevision


def rr(replica: str, revision: int) -> ReplicaRevision:
    return ReplicaRevision(replica, f"{replica}.local:4650", revision)


def test_converged_when_every_replica_reached_the_target() -> None:
    result = convergence([rr("b", 12), rr("a", 10)], 10)
    assert result.converged is True
    assert result.behind == ()
    assert result.target == 10
    assert [r.replica for r in result.replicas] == ["a", "b"]


def test_replicas_behind_are_listed_furthest_first() -> None:
    entries = [rr("c", 9), rr("a", 10), rr("b", 4), rr("d", 9)]
    result = convergence(entries, 10)
    assert result.converged is False
    assert [(r.replica, r.applied_revision) for r in result.behind] == [
        ("b", 4),
        ("c", 9),
        ("d", 9),
    ]
    assert [r.replica for r in result.replicas] == ["a", "b", "c", "d"]
    assert result.behind[0].address == "b.local:4650"


def test_no_live_replica_is_vacuously_converged() -> None:
    result = convergence([], 100)
    assert result.converged is True
    assert result.replicas == ()


def test_target_zero_is_always_converged() -> None:
    assert convergence([rr("a", 0)], 0).converged is True


def test_negative_target_is_rejected() -> None:
    with pytest.raises(InvalidRevision) as err:
        convergence([rr("a", 1)], -1)
    assert err.value.reason == "INVALID_REVISION"


def test_negative_applied_revision_is_rejected() -> None:
    with pytest.raises(InvalidRevision) as err:
        convergence([rr("a", -5)], 1)
    assert err.value.metadata["replica"] == "a"


def test_duplicate_replica_is_rejected() -> None:
    with pytest.raises(DuplicateReplica) as err:
        convergence([rr("a", 1), rr("a", 2)], 1)
    assert err.value.reason == "DUPLICATE_REPLICA"


@given(
    revisions=st.dictionaries(
        st.text(alphabet="abcdef", min_size=1, max_size=4),
        st.integers(min_value=0, max_value=1000),
        max_size=10,
    ),
    target=st.integers(min_value=0, max_value=1000),
)
def test_convergence_properties(revisions: dict[str, int], target: int) -> None:
    result = convergence([rr(name, rev) for name, rev in revisions.items()], target)
    behind = {r.replica for r in result.behind}
    assert behind == {name for name, rev in revisions.items() if rev < target}
    assert result.converged is (not behind)
    assert len(result.replicas) == len(revisions)
