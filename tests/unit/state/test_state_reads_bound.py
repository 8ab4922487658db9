"""Reader.prepare with a max_stale bound: a virtual clock drives the
replica's last contact; its consistent read (the proof) fails while cut."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace

import pytest
from virtual_clock import VirtualClock

from drover.api.types.v1 import query_pb2
from drover.coord.errors import EtcdUnavailable
from drover.errors import InvalidArgument
from drover.paging import PageTokenCodec
from drover.state.config import BlockingConfig, ReadConfig
from drover.state.errors import StaleReadBound
from drover.state.reads import Reader


class _Cache:
    """Last heard from etcd at ``heard``; ``sync`` reaches etcd only while
    ``reachable`` (and then counts as contact)."""

    def __init__(self, clock: VirtualClock) -> None:
        self.clock, self.heard, self.reachable, self.syncs = clock, clock(), True, 0
        self.tables = {"job": SimpleNamespace(index=7)}

    def last_contact(self) -> float:
        return self.clock() - self.heard

    async def sync(self) -> int:
        self.syncs += 1
        if not self.reachable:
            raise EtcdUnavailable("etcd did not answer")
        self.heard = self.clock()
        return 7


def _query(*, stale: bool = False, max_stale: float = 0.0) -> query_pb2.QueryOptions:
    q = query_pb2.QueryOptions(stale=stale)
    if max_stale:
        q.max_stale.FromTimedelta(timedelta(seconds=max_stale))
    return q


@pytest.fixture
def cut() -> tuple[VirtualClock, _Cache, Reader]:
    clock = VirtualClock(100.0)
    cache = _Cache(clock)
    return clock, cache, Reader(cache, PageTokenCodec(),  # type: ignore[arg-type]
                                  config=ReadConfig(), blocking=BlockingConfig())


async def test_within_the_bound_a_stale_read_is_served_without_etcd(cut) -> None:
    clock, cache, reader = cut
    cache.reachable = False
    clock.advance(1.5)
    assert await reader.prepare("job", _query(max_stale=2.0)) == 7
    assert cache.syncs == 0


async def test_past_the_bound_a_cut_replica_refuses_with_its_last_contact(cut) -> None:
    clock, cache, reader = cut
    cache.reachable = False
    clock.advance(5.0)
    with pytest.raises(StaleReadBound) as err:
        await reader.prepare("job", _query(stale=True, max_stale=2.0))
    assert err.value.metadata["last_contact"] == "5.000"
    # Without a bound, the same replica still serves a stale read.
    assert await reader.prepare("job", _query(stale=True)) == 7


async def test_past_the_bound_an_idle_but_healthy_replica_proves_contact_and_serves(cut) -> None:
    clock, cache, reader = cut
    clock.advance(30.0)  # no etcd traffic for 30 s: silent, not cut
    assert await reader.prepare("job", _query(max_stale=2.0)) == 7
    assert cache.syncs == 1 and cache.last_contact() == 0.0


async def test_a_negative_bound_is_invalid(cut) -> None:
    _clock, _cache, reader = cut
    with pytest.raises(InvalidArgument):
        await reader.prepare("job", query_pb2.QueryOptions(
            max_stale=query_pb2.QueryOptions().max_stale.__class__(seconds=-1)))
