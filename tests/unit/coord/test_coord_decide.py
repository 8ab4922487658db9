from __future__ import annotations

from dataclasses import dataclass

import pytest

from drover.coord.decide import Action, decide


@dataclass(frozen=True)
class T:
    leader_key: str
    revision: int


T1, T2 = T("/d/v1/election/s/a", 5), T("/d/v1/election/s/b", 9)


@pytest.mark.parametrize(
    ("acted", "latest", "missed", "action"),
    [
        (None, None, 0, Action.NOTHING),
        (None, None, 2, Action.WARN_NOTHING),  # gained then lost before acting
        (None, T1, 0, Action.ESTABLISH),
        (None, T1, 3, Action.ESTABLISH),
        (T1, None, 0, Action.REVOKE),
        (T1, None, 4, Action.REVOKE),
        (T1, T1, 0, Action.NOTHING),
        (T1, T2, 2, Action.REVOKE_THEN_ESTABLISH),  # lost then regained
        (T1, T("/d/v1/election/s/a", 6), 1, Action.REVOKE_THEN_ESTABLISH),
    ],
)
def test_decide(acted: T | None, latest: T | None, missed: int, action: Action) -> None:
    assert decide(acted, latest, missed) is action


def test_decide_rejects_negative_missed() -> None:
    with pytest.raises(ValueError, match="missed"):
        decide(None, T1, -1)
