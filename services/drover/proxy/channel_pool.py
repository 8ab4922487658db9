"""One gRPC channel per backend address, shared by every forwarded call.

Channels are opened lazily and closed when their address leaves every
server list. A replica restarted at the same address (membership shows a
new incarnation, i.e. a new ``started_at``) gets a fresh channel: the old
one may sit in connection backoff for seconds after the restart, failing
calls fast that the new process would answer.

Channels are built by :func:`drover.rpc.channels.channel` with the channel's
own retries off: the proxy decides retries itself (see
:mod:`drover.proxy.core.retry`), a second, hidden layer would repeat calls behind
its back.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable

import grpc

from drover.config import TlsFiles
from drover.rpc.channels import channel

ChannelFactory = Callable[[str], grpc.aio.Channel]


class ChannelPool:
    def __init__(self, tls: TlsFiles | None = None, factory: ChannelFactory | None = None) -> None:
        self._factory = factory or (lambda address: channel(address, tls=tls, retries=False))
        self._channels: dict[str, grpc.aio.Channel] = {}
        self._incarnations: dict[str, object] = {}
        self._closing: set[asyncio.Task[None]] = set()

    def get(self, address: str) -> grpc.aio.Channel:
        ch = self._channels.get(address)
        if ch is None:
            ch = self._channels[address] = self._factory(address)
        return ch

    def __contains__(self, address: str) -> bool:
        return address in self._channels

    def refresh(self, address: str, incarnation: object) -> None:
        """Membership says ``address`` runs ``incarnation``; a new one resets it."""
        previous = self._incarnations.get(address)
        self._incarnations[address] = incarnation
        if previous is not None and previous != incarnation and address in self._channels:
            self._close_later(self._channels.pop(address))

    def retain(self, addresses: Iterable[str]) -> None:
        """Close the channels of addresses not in ``addresses``."""
        keep = set(addresses)
        for address in [a for a in self._channels if a not in keep]:
            self._close_later(self._channels.pop(address))
        for address in [a for a in self._incarnations if a not in keep]:
            del self._incarnations[address]

    def _close_later(self, ch: grpc.aio.Channel) -> None:
        # A short grace lets calls still running on it finish.
        task = asyncio.ensure_future(ch.close(grace=1.0))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def close(self) -> None:
        channels, self._channels = list(self._channels.values()), {}
        for ch in channels:
            with contextlib.suppress(Exception):
                await ch.close()
        for task in list(self._closing):
            with contextlib.suppress(Exception):
                await task
