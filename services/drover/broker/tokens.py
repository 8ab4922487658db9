"""Delivery tokens carry the term of the leader that handed them out.

A token is ``<term>.<nonce>``: the term (the leader key's create_revision,
the fence) of the broker that delivered, and a random nonce. The worker
treats it as opaque. The broker fences a worker's outcome with the token's
term, not its own: an outcome of a delivery made under an earlier term can
never be written, even by a process that was frozen between checking its
lease and answering (the state service answers FENCE_LOST). Tokens of a
broker without a term (unit tests, a core never enabled for a term) are the
bare nonce; :func:`token_term` reads those as term 0.
"""

from __future__ import annotations

__all__ = ["make_token", "token_term"]


def make_token(term: int, nonce: str) -> str:
    return f"{term}.{nonce}" if term > 0 else nonce


def token_term(token: str) -> int:
    """The term a token was issued under; 0 when it names none."""
    head, sep, _ = token.partition(".")
    if not sep or not head.isdigit() or len(head) > 19:
        return 0
    return int(head)
