from __future__ import annotations

import asyncio

from drover.coord.latest import Latest, LatestChannel


def test_latest_keeps_newest_and_counts_missed() -> None:
    latest: Latest[str | None] = Latest(None)
    assert latest.read(0).value is None and latest.version == 0
    for v in ("a", "b", "c"):
        latest.set(v)
    seen = latest.read(0)
    assert (seen.value, seen.version, seen.missed) == ("c", 3, 2)
    assert latest.read(3).missed == 0
    assert latest.changed_since(2) and not latest.changed_since(3)


async def test_burst_collapses_to_last_value_and_never_blocks_writer() -> None:
    ch: LatestChannel[int] = LatestChannel(0)
    for i in range(1, 1001):
        ch.publish(i)  # no reader: must not block or grow
    seen = await asyncio.wait_for(ch.wait_newer(0), 1)
    assert (seen.value, seen.missed) == (1000, 999)


async def test_wait_newer_wakes_on_next_publish() -> None:
    ch: LatestChannel[str] = LatestChannel("x")
    waiter = asyncio.ensure_future(ch.wait_newer(ch.version))
    await asyncio.sleep(0)
    assert not waiter.done()
    ch.publish("y")
    seen = await asyncio.wait_for(waiter, 1)
    assert (seen.value, seen.missed) == ("y", 0)
