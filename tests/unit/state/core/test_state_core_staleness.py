"""The stale read bound (QueryOptions.max_stale), as a pure rule."""

from __future__ import annotations

import pytest

from drover.errors import InvalidArgument, Kind
from drover.state.core import staleness
from drover.state.core.staleness import Bound, Verdict


def test_a_consistent_read_always_catches_up() -> None:
    assert staleness.decide(Bound(stale=False), 0.0) is Verdict.PROVE


def test_a_stale_read_without_a_bound_is_served_however_old() -> None:
    assert staleness.decide(Bound(stale=True), 3600.0) is Verdict.SERVE


@pytest.mark.parametrize(("contact", "verdict"), [
    (0.0, Verdict.SERVE), (1.99, Verdict.SERVE), (2.0, Verdict.SERVE),
    (2.01, Verdict.PROVE), (60.0, Verdict.PROVE)])
def test_a_bounded_stale_read_is_served_within_the_bound_only(contact: float,
                                                              verdict: Verdict) -> None:
    assert staleness.decide(Bound(stale=True, max_stale=2.0), contact) is verdict


def test_max_stale_implies_stale_and_must_not_be_negative() -> None:
    assert staleness.bound_of(False, 5.0) == Bound(stale=True, max_stale=5.0)
    assert staleness.bound_of(False, 0.0) == Bound(stale=False)
    assert staleness.bound_of(True, 0.0) == Bound(stale=True)
    with pytest.raises(InvalidArgument) as err:
        staleness.bound_of(True, -1.0)
    assert err.value.metadata == {"field": "query.max_stale"}


def test_the_refusal_is_unavailable_with_the_replicas_last_contact() -> None:
    err = staleness.refusal(Bound(stale=True, max_stale=2.0), 7.25)
    assert err.kind is Kind.UNAVAILABLE and err.reason == "STALE_READ_BOUND"
    assert err.metadata == {"last_contact": "7.250", "max_stale": "2"}
