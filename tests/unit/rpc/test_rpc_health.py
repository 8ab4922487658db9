"""Health: liveness is the process, readiness is the app's word plus its checks."""

from __future__ import annotations

import asyncio

from grpc_health.v1 import health_pb2

from drover.rpc.health import LIVENESS, OVERALL, Health

S = health_pb2.HealthCheckResponse
A, B = "drover.a.v1.A", "drover.b.v1.B"


async def status(h: Health, name: str) -> int:
    resp = await h.servicer.Check(health_pb2.HealthCheckRequest(service=name), None)
    return int(resp.status)


async def test_liveness_serves_before_readiness() -> None:
    h = Health([A])
    await h.init()
    assert await status(h, LIVENESS) == S.SERVING
    assert await status(h, OVERALL) == S.NOT_SERVING
    assert await status(h, A) == S.NOT_SERVING


async def test_readiness_needs_the_app_and_every_check_both_ways() -> None:
    h = Health([A, B])
    await h.init()
    etcd_up = True

    async def etcd() -> str | None:
        return None if etcd_up else "etcd unreachable"

    async def hangs() -> str | None:
        await asyncio.sleep(60)
        return None

    h.add_check("etcd", etcd)
    await h.set_ready(A)
    assert (await status(h, A), await status(h, OVERALL)) == (S.SERVING, S.NOT_SERVING)
    await h.set_ready(B)
    assert await status(h, OVERALL) == S.SERVING
    etcd_up = False
    assert await h.refresh() == {"etcd": "etcd unreachable"}
    assert [await status(h, n) for n in (OVERALL, A, B)] == [S.NOT_SERVING] * 3
    assert await status(h, LIVENESS) == S.SERVING  # the process still works
    assert not h.is_ready()
    etcd_up = True
    assert await h.refresh() == {}
    assert [await status(h, n) for n in (OVERALL, A, B)] == [S.SERVING] * 3
    # A check that does not answer in time fails, it does not block readiness.
    quick = Health([A], check_timeout=0.05)
    await quick.init()
    quick.add_check("slow", hangs)
    await quick.set_ready(A)
    failing = await quick.refresh()
    assert list(failing) == ["slow"] and await status(quick, A) == S.NOT_SERVING


async def test_a_raising_check_means_not_ready() -> None:
    h = Health([A])
    await h.init()

    async def broken() -> str | None:
        raise RuntimeError("boom")

    h.add_check("broken", broken)
    await h.set_ready(A)
    assert await h.refresh() == {"broken": "RuntimeError: boom"}
    assert await status(h, A) == S.NOT_SERVING


async def test_shutdown_turns_everything_off_and_ignores_later_changes() -> None:
    h = Health([A])
    await h.init()
    await h.set_ready(A)
    await h.shutdown()
    await h.set_ready(A)
    for name in (OVERALL, A, LIVENESS):
        assert await status(h, name) == S.NOT_SERVING


async def test_a_refresh_cancelled_at_any_point_ends_cancelled() -> None:
    """A server stops its readiness loop with one cancel: wherever that cancel
    lands in a refresh (also just as a check finishes, where 3.11's wait_for
    drops it and the loop would run on), the refresh ends cancelled."""
    for offset in range(8):
        h = Health([A])
        await h.init()

        async def quick() -> str | None:
            await asyncio.sleep(0)
            return None

        h.add_check("quick", quick)
        refresh = asyncio.create_task(h.refresh())
        for _ in range(offset):
            await asyncio.sleep(0)
        if not refresh.cancel():
            continue  # it had finished: nothing to cancel
        await asyncio.wait({refresh}, timeout=1.0)
        assert refresh.cancelled(), f"cancelled after {offset} loop turns, the refresh went on"
