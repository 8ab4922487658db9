"""The plan delivery rules (:mod:`drover.state.allocations.core.eval_token`)."""

from __future__ import annotations

import pytest

from drover.state.allocations.core.eval_token import check_term, ended, token_term
from drover.state.errors import PlanDeliveryEnded


def test_token_term_reads_the_broker_term() -> None:
    assert token_term("42.abc") == 42
    assert token_term("abc") == 0 and token_term("x.y") == 0 and token_term("") == 0


def test_check_term_refuses_no_token_and_another_term() -> None:
    check_term("e1", "5.n", 5)
    with pytest.raises(PlanDeliveryEnded, match="carries no eval_token"):
        check_term("e1", "", 5)
    with pytest.raises(PlanDeliveryEnded, match="evaluation token does not match") as err:
        check_term("e1", "4.n", 5)
    assert err.value.reason == "PLAN_DELIVERY_ENDED"
    assert err.value.metadata == {"term": "4", "leader_term": "5"}


def test_broker_refusals_in_nomads_words() -> None:
    assert str(ended("e1", "TOKEN_EXPIRED", "x")).startswith("evaluation nack timeout reached")
    assert str(ended("e1", "TOKEN_MISMATCH", "x")).startswith("evaluation token does not match")
    assert str(ended("e1", "NOT_OUTSTANDING", "x")).startswith("evaluation is not outstanding")
