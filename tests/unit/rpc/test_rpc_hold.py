"""Holds: attempts on a server that shows no life are ended; live ones are not."""

from __future__ import annotations

import asyncio

import pytest

from drover.errors import InvalidArgument
from drover.rpc.hold import AttemptEnded, Holds

HOLD = 0.2  # seconds; every wait below is bounded by a few holds


class Servers:
    """Probe answers: True for live servers; a frozen one never answers."""

    def __init__(self) -> None:
        self.frozen: set[str] = set()
        self.probes: list[str] = []

    async def probe(self, address: str, within: float) -> bool:
        self.probes.append(address)
        if address in self.frozen:
            await asyncio.sleep(within)  # the ping times out
            return False
        return True


async def test_a_frozen_server_ends_its_attempts_within_the_hold() -> None:
    servers = Servers()
    servers.frozen.add("a")
    holds = Holds(servers.probe, HOLD)
    never = asyncio.get_running_loop().create_future()
    with holds.attempt("a") as held:
        with pytest.raises(AttemptEnded) as e:
            await asyncio.wait_for(holds.wait(held, never), 10 * HOLD)
    assert e.value.address == "a" and "hold timeout" in e.value.reason
    assert never.cancelled()
    assert holds.inflight("a") == 0 and holds.ended_count == 1
    await holds.close()


async def test_a_long_poll_on_a_live_server_outlives_the_hold() -> None:
    servers = Servers()
    holds = Holds(servers.probe, HOLD)

    async def long_poll() -> str:
        await asyncio.sleep(4 * HOLD)
        return "answer"

    with holds.attempt("a") as held:
        assert await asyncio.wait_for(holds.wait(held, long_poll()), 20 * HOLD) == "answer"
    assert servers.probes  # it was pinged, and answered
    assert holds.ended_count == 0
    await holds.close()


async def test_end_stops_every_attempt_on_that_server_only() -> None:
    holds = Holds(Servers().probe, 60.0)
    loop = asyncio.get_running_loop()
    futures = [loop.create_future() for _ in range(3)]
    with holds.attempt("a") as a1, holds.attempt("a") as a2, holds.attempt("b") as b1:
        waits = [asyncio.ensure_future(holds.wait(h, f))
                 for h, f in zip((a1, a2, b1), futures, strict=True)]
        await asyncio.sleep(0)
        assert holds.end("a", "it left membership") == 2
        for w in waits[:2]:
            with pytest.raises(AttemptEnded, match="left membership"):
                await asyncio.wait_for(w, 5)
        assert not waits[2].done()
        futures[2].set_result("b answered")
        assert await asyncio.wait_for(waits[2], 5) == "b answered"
    await holds.close()


async def test_the_call_error_passes_through() -> None:
    holds = Holds(Servers().probe, 60.0)

    async def fails() -> None:
        raise ValueError("the server said no")

    with holds.attempt("a") as held, pytest.raises(ValueError, match="said no"):
        await holds.wait(held, fails())
    await holds.close()


def test_hold_must_be_positive() -> None:
    with pytest.raises(InvalidArgument):
        Holds(Servers().probe, 0)
