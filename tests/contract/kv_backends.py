"""The KV contract's backends (the ``backend`` fixture is in conftest.py):
:class:`MemoryKV` on the virtual clock, and :class:`EtcdKV` on a real
etcd of the contract's own. A test asks for ``backend`` and runs
once on each; the test body cannot tell them apart except through
:meth:`Backend.pass_time` (the virtual clock moves; for etcd time passes)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from virtual_clock import VirtualClock

from drover.coord.etcd_kv import EtcdKV
from drover.coord.memkv import MemoryKV


@dataclass
class Backend:
    name: str
    kv: MemoryKV | EtcdKV  # the contract's two sides, each with all it checks
    prefix: bytes
    clock: VirtualClock | None = None

    def key(self, name: str) -> bytes:
        return self.prefix + name.encode()

    async def pass_time(self, seconds: float) -> None:
        if self.clock is not None:
            self.clock.advance(seconds)
            assert isinstance(self.kv, MemoryKV)
            self.kv.expire_leases()
        else:
            await asyncio.sleep(seconds)


