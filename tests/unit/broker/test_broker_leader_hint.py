"""A broker shutdown's drain of open polls is bounded even when the task
ending them (after a step-down) does not end on its cancel: the polls are
failed NotLeader and the drain returns. On the old shape (a deadline around
``await ending``) the deadline's cancel went into that task, was swallowed,
and the drain never returned."""

from __future__ import annotations

import asyncio
import logging

import pytest
from stubborn import Stubborn, ends_within, settle

from drover.broker.leader_hint import LeaderHints
from drover.broker.long_poll import LongPolls
from drover.errors import NotLeader

HANG = 10.0  # a drain bounded at ~0.6 s not done by then is hung


@pytest.mark.parametrize("swallow", [1, None], ids=["swallows-once", "ignores-all"])
async def test_drain_polls_is_bounded_when_ending_them_ignores_its_cancel(
        swallow: int | None, caplog: pytest.LogCaptureFixture) -> None:
    polls = LongPolls()
    waiter = polls.park(["service"])
    hints = LeaderHints(polls, own_address=lambda: "me:1", leading=lambda: False,
                        not_leader=lambda: NotLeader("broker", None), hint_wait=0.1)
    stubborn = Stubborn(swallow)
    hints._end_polls = stubborn.hold  # type: ignore[method-assign]  # the stuck seam
    hints.stepped_down()
    ending = hints._ending
    async with asyncio.timeout(HANG):
        await stubborn.entered.wait()
    with caplog.at_level(logging.WARNING, logger="drover.tasks"):
        draining = await ends_within(hints.drain_polls(), HANG)
    try:
        assert draining.done(), "the poll drain hung on the task ending the polls"
        draining.result()
        assert isinstance(waiter.future.exception(), NotLeader)
        assert stubborn.swallowed == 1
        assert any(r.getMessage().startswith("broker poll drain: task") for r in caplog.records)
    finally:
        stubborn.free()
        await settle(draining, ending)
