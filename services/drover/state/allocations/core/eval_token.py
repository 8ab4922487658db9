"""Whether a plan's eval token still holds: the pure rules (the broker
call is :mod:`drover.state.allocations.eval_token`).

A delivery token is ``<term>.<nonce>``: the term (create revision of the
election key) of the broker leader that handed it out (the broker's
``tokens`` module; the worker treats it as opaque, the state service reads
only the term). A plan is applied only if its delivery is outstanding,
as Nomad's ``Plan.Submit`` asks its broker; refusals are
:class:`PlanDeliveryEnded` with Nomad's wording:

- no token: the plan names no delivery;
- a token of another term than the broker leader's: "evaluation token does
  not match" (the evaluation was restored and redelivered by a later leader);
- the broker says the evaluation is not outstanding, the token expired (its
  nack timer fired) or another token holds it.
"""

from __future__ import annotations

from drover.state.errors import PlanDeliveryEnded

NOT_OUTSTANDING = "evaluation is not outstanding"
TOKEN_MISMATCH = "evaluation token does not match"
NACK_TIMEOUT = "evaluation nack timeout reached"


def token_term(token: str) -> int:
    """The broker term a token was issued under; 0 when it names none."""
    head, sep, _ = token.partition(".")
    if not sep or not head.isdigit() or len(head) > 19:
        return 0
    return int(head)


def check_term(eval_id: str, token: str, leader_term: int) -> None:
    """Refuse a plan whose token is missing or from another broker term."""
    if not token:
        raise PlanDeliveryEnded(f"the plan for evaluation {eval_id!r} carries no eval_token: "
                                f"send the token the broker delivered it with",
                                metadata={"field": "eval_token"})
    term = token_term(token)
    if term != leader_term:
        raise PlanDeliveryEnded(
            f"{TOKEN_MISMATCH}: evaluation {eval_id!r} was delivered by broker term {term}, "
            f"the broker leader's term is {leader_term}",
            metadata={"term": str(term), "leader_term": str(leader_term)})


#: The broker's refusal reasons, in Nomad's words.
BROKER_REASONS = {
    "UNKNOWN_EVALUATION": NOT_OUTSTANDING,
    "NOT_OUTSTANDING": NOT_OUTSTANDING,
    "TOKEN_EXPIRED": NACK_TIMEOUT,
    "TOKEN_MISMATCH": TOKEN_MISMATCH,
}


def ended(eval_id: str, broker_reason: str, detail: str) -> PlanDeliveryEnded:
    words = BROKER_REASONS.get(broker_reason, NOT_OUTSTANDING)
    return PlanDeliveryEnded(f"{words}: evaluation {eval_id!r} ({detail})",
                             metadata={"broker_reason": broker_reason})
