"""The leadership decision, as a pure function.

Input: the term the components currently act on (``None``: they are revoked),
the latest notice from the drop-but-last channel (a term or ``None``) and
how many notices were dropped before it. Output: what to do. The flapping
rules (Nomad's lessons):

* gained-then-lost before acting (acted none, latest none, some dropped):
  warn, do nothing; establishing a term that is already over would only
  make writes that the fence rejects;
* lost-then-regained (acted T1, latest T2 != T1): revoke fully, then
  establish from scratch; T2's barrier and restore must not inherit T1's
  in-memory state;
* otherwise establish on gain, revoke on loss, nothing when unchanged.
"""

from __future__ import annotations

import enum
from typing import Protocol

__all__ = ["Action", "decide"]


class _Termish(Protocol):
    @property
    def leader_key(self) -> str: ...

    @property
    def revision(self) -> int: ...


class Action(enum.Enum):
    NOTHING = "nothing"
    ESTABLISH = "establish"
    REVOKE = "revoke"
    REVOKE_THEN_ESTABLISH = "revoke_then_establish"
    WARN_NOTHING = "warn_nothing"


def _same(a: _Termish, b: _Termish) -> bool:
    return a.leader_key == b.leader_key and a.revision == b.revision


def decide(acted: _Termish | None, latest: _Termish | None, missed: int) -> Action:
    if missed < 0:
        raise ValueError(f"missed must be >= 0, got {missed}")
    if acted is None:
        if latest is not None:
            return Action.ESTABLISH
        return Action.WARN_NOTHING if missed else Action.NOTHING
    if latest is None:
        return Action.REVOKE
    return Action.NOTHING if _same(acted, latest) else Action.REVOKE_THEN_ESTABLISH
