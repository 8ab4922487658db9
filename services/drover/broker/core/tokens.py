"""Delivery tokens carry the term of the leader that handed them out.

A token is ``<term>.<nonce>``: the term (the leader key's create_revision,
the fence) of the broker that delivered, and a random nonce. The worker
treats it as opaque. The broker fences a worker's outcome with the token's
term, not its own: an outcome of a delivery made under an earlier term can
never be written, even by a process that was frozen between checking its
lease and answering (the state service answers FENCE_LOST). Tokens of a
broker without a term (unit tests, a core never enabled for a term) are the
bare nonce; :func:`token_term` reads those as term 0. :func:`random_uuid`
makes the nonces (and the ids of the follow-ups the core creates) from the
core's injected random source, so a seeded test is deterministic.
"""

from __future__ import annotations

import random

__all__ = ["make_token", "random_uuid", "token_term"]

# The RFC 4122 variant and version-4 bits of a random UUID, as uuid.UUID sets them.
_UUID_CLEAR = ~((0xC000 << 48) | (0xF000 << 64))
_UUID_V4 = (0x8000 << 48) | (4 << 76)


def make_token(term: int, nonce: str) -> str:
    return f"{term}.{nonce}" if term > 0 else nonce


def token_term(token: str) -> int:
    """The term a token was issued under; 0 when it names none."""
    head, sep, _ = token.partition(".")
    if not sep or not head.isdigit() or len(head) > 19:
        return 0
    return int(head)


def random_uuid(rng: random.Random) -> str:
    """A version-4 UUID drawn from ``rng``, as ``str(uuid.UUID(int=...,
    version=4))`` formats it."""
    # Formatted directly: one per delivery (its token), and the UUID class
    # costs twice as much.
    n = (rng.getrandbits(128) & _UUID_CLEAR) | _UUID_V4
    h = f"{n:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
