"""The delivery check keeps the broker leader it read last (state.token_check):
asked while a token is of its term, read again otherwise or when it cannot
answer; never trusted past a term."""

from __future__ import annotations

from typing import Any

import pytest

from drover.state.allocations.eval_token import BrokerTokenCheck
from drover.state.errors import BrokerUnreachable, PlanDeliveryEnded


class _Brokers:
    """Who leads (etcd's answer) and which addresses answer OutstandingReset."""

    def __init__(self, token_check: BrokerTokenCheck) -> None:
        self.leader = ("b1:1", 3, "election/3")
        self.down: set[str] = set()
        self.reads = 0
        self.asked: list[str] = []
        self.token_check = token_check

    async def read(self) -> tuple[str, int, str]:
        self.reads += 1
        self.token_check._known = self.leader
        return self.leader

    async def ask(self, eval_id: str, token: str, address: str, term: int,
                  key: str) -> tuple[bytes, int]:
        self.asked.append(address)
        if address in self.down:
            self.token_check._known = None
            raise BrokerUnreachable(f"{address} is down")
        return key.encode(), term


@pytest.fixture
def brokers(monkeypatch: pytest.MonkeyPatch) -> _Brokers:
    d = BrokerTokenCheck(kv=Any, keyspace=Any, dial=Any)  # type: ignore[arg-type]
    b = _Brokers(d)
    monkeypatch.setattr(d, "_leader", b.read)
    monkeypatch.setattr(d, "_ask", b.ask)
    return b


async def test_the_kept_leader_is_asked_while_tokens_are_of_its_term(brokers: _Brokers) -> None:
    d = brokers.token_check
    for _ in range(3):
        assert await d.vouch("e1", "3.nonce") == (b"election/3", 3)
    assert brokers.reads == 1 and brokers.asked == ["b1:1"] * 3


async def test_a_token_of_another_term_reads_the_leader_again(brokers: _Brokers) -> None:
    d = brokers.token_check
    await d.vouch("e1", "3.nonce")
    brokers.leader = ("b2:1", 4, "election/4")  # failed over
    assert await d.vouch("e2", "4.nonce") == (b"election/4", 4)
    with pytest.raises(PlanDeliveryEnded):  # the old term's delivery, against the new leader
        await d.vouch("e1", "3.nonce")
    assert brokers.reads == 3 and brokers.asked == ["b1:1", "b2:1"]


async def test_a_kept_leader_that_cannot_answer_is_read_again_once(brokers: _Brokers) -> None:
    d = brokers.token_check
    await d.vouch("e1", "3.nonce")
    brokers.down.add("b1:1")
    with pytest.raises(BrokerUnreachable):  # same term, still down: fails closed
        await d.vouch("e1", "3.nonce")
    assert brokers.reads == 2 and brokers.asked == ["b1:1", "b1:1", "b1:1"]
