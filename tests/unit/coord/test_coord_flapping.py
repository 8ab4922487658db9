"""The leadership actuator under flapping notices (no etcd: a fake KV answers
the confirm read with whatever term is current; the real thing on MemoryKV
is in test_coord_leadership_memkv.py)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, cast

import pytest

from drover.coord.keys import Keyspace
from drover.coord.kv import KV, RangePage
from drover.coord.leadership import Leadership, LeadershipConfig, LeadershipKV
from drover.coord.term import Term

KS = Keyspace("/flap")
SERVICE = "broker"


def term(rev: int) -> Term:
    return Term(SERVICE, f"{KS.election_prefix(SERVICE)}{rev:x}", rev, rev, "a:1")


class FakeKV:
    """Answers the actuator's one read: the election prefix holds ``leader``."""

    def __init__(self) -> None:
        self.leader: Term | None = None

    async def range(self, key: bytes, range_end: bytes, **_: Any) -> RangePage:
        t = self.leader
        kvs = [] if t is None else [KV(t.leader_key.encode(), b"a:1", t.revision, t.revision)]
        return RangePage(kvs, False, 100, len(kvs))


class Recorder:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.gate = asyncio.Event()
        self.gate.set()

    async def establish(self, t: Term) -> None:
        self.calls.append(f"establish {t.revision}")
        await self.gate.wait()

    async def revoke(self) -> None:
        self.calls.append("revoke")


def make(comp: Any, **cfg: Any) -> tuple[Leadership, FakeKV]:
    kv = FakeKV()
    # the fake answers the one read these tests lead the actuator to (its
    # confirm); campaigning, which would use the rest, is not started here
    lead = Leadership(cast(LeadershipKV, kv), KS, SERVICE, "a:1", [comp],
                      config=LeadershipConfig(ttl=2, **cfg))
    return lead, kv


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_gained_then_lost_before_acting_warns_and_does_nothing(
        caplog: pytest.LogCaptureFixture) -> None:
    comp = Recorder()
    lead, _ = make(comp)
    actuator = asyncio.create_task(lead._actuate())
    try:
        lead.notices.publish(term(5))
        lead.notices.publish(None)  # both before the actuator ran
        with caplog.at_level(logging.WARNING, "drover.coord.leadership"):
            await settle()
        assert comp.calls == []
        assert "gained and lost before acting on it" in caplog.text
    finally:
        actuator.cancel()


async def test_lost_then_regained_revokes_then_establishes_latest_of_a_burst(
        caplog: pytest.LogCaptureFixture) -> None:
    comp = Recorder()
    lead, client = make(comp)
    actuator = asyncio.create_task(lead._actuate())
    try:
        client.leader = term(5)
        comp.gate.clear()  # establish of term 5 is busy...
        lead.notices.publish(term(5))
        await settle()
        assert comp.calls == ["establish 5"]
        for t in (None, term(7), None, term(9), None, term(11)):  # ...while it flaps
            lead.notices.publish(t)
        client.leader = term(11)
        with caplog.at_level(logging.WARNING, "drover.coord.leadership"):
            comp.gate.set()
            await settle()
        assert comp.calls == ["establish 5", "revoke", "establish 11"]
        assert lead.term == term(11)
        assert "lost and regained" in caplog.text
    finally:
        actuator.cancel()


async def test_unconfirmed_term_is_not_established() -> None:
    comp = Recorder()
    lead, client = make(comp)
    client.leader = term(3)  # someone else is lowest
    actuator = asyncio.create_task(lead._actuate())
    try:
        lead.notices.publish(term(5))
        await settle()
        assert comp.calls == [] and lead.term is None
    finally:
        actuator.cancel()


async def test_establish_timeout_revokes_and_gives_the_term_up() -> None:
    comp = Recorder()
    comp.gate.clear()  # establish never finishes
    lost: list[str] = []

    class Scope:
        ended = False

        def spawn(self, coro: Any, *, name: str | None = None) -> Any:
            raise AssertionError

        def report_lost(self, reason: str) -> None:
            lost.append(reason)

    lead, client = make(comp, establish_timeout=0.05)
    t5 = Term(SERVICE, term(5).leader_key, 5, 5, "a:1", scope=Scope())
    client.leader = t5
    actuator = asyncio.create_task(lead._actuate())
    try:
        lead.notices.publish(t5)
        for _ in range(50):
            await asyncio.sleep(0.01)
            if lost:
                break
        assert comp.calls == ["establish 5", "revoke"]
        assert lead.term is None and "establish of Recorder failed" in lost[0]
    finally:
        actuator.cancel()
