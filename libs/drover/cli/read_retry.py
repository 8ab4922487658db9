"""Reads that wait out a leader election, within the call's own timeout.

While a broker or deployment-watcher election runs (seconds: the session
TTL), a read through the proxy is answered UNAVAILABLE: ``NOT_LEADER`` with
no leader known, ``NO_SERVER``, or the dead leader's own transport error
relayed by the proxy. None of these says the read failed for good, so
:class:`ReadRetryChannel` sends a read (:func:`drover.rpc.reads.is_read`)
again, with backoff, until it succeeds or the call's timeout would pass.

The invariants:

* Only reads are repeated: a write is answered with whatever its server
  said (it may have been applied).
* Only an UNAVAILABLE from a drover that *answered* is waited on: a status
  carrying a server's trailing metadata, or one with none while the address
  still accepts connections (the proxy relaying a broken server). With no
  server listening at all the first failure is the answer, at once.
* ``ACL_DATA_STALE`` is not waited on: the server's view of the ACL data
  needs its etcd connection fixed, which a client cannot wait out; nor is
  ``HOLD_TIMEOUT`` (every address stayed silent past the hold: a frozen
  server, :mod:`drover.rpc.failover`): the call ends within the hold.
* The caller's timeout bounds every attempt and every pause together; a
  call that runs out of it while waiting fails with the last UNAVAILABLE
  (what the servers said), not DEADLINE_EXCEEDED.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import grpc

from drover.rpc.reads import is_read
from drover.rpc.remote import remote_status

__all__ = ["ReadRetryChannel", "reachable", "waitable"]

#: The first pause between attempts, doubled up to :data:`MAX_PAUSE`.
FIRST_PAUSE = 0.1
MAX_PAUSE = 1.0
#: A call given no timeout still stops retrying after this long.
NO_TIMEOUT_BOUND = 30.0
#: Reasons that no amount of waiting by a client fixes.
NOT_WAITED_ON = frozenset({"ACL_DATA_STALE", "HOLD_TIMEOUT"})


def _host_port(address: str) -> tuple[str, int] | None:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def reachable(addresses: Sequence[str], timeout: float = 0.5) -> bool:
    """Whether any of ``addresses`` accepts a TCP connection now."""
    for address in addresses:
        hp = _host_port(address)
        if hp is None:
            continue
        try:
            with socket.create_connection(hp, timeout=timeout):
                return True
        except OSError:
            continue
    return False


def waitable(err: grpc.RpcError, addresses: Sequence[str],
             probe: Callable[[Sequence[str]], bool] = reachable) -> bool:
    """Whether a failed read is worth sending again (see the module rules)."""
    status = remote_status(err)
    if status.code != "UNAVAILABLE" or status.reason in NOT_WAITED_ON:
        return False
    return status.answered or probe(addresses)


class ReadRetryChannel:
    """Wraps a client channel (plain or failover): reads wait out elections."""

    def __init__(self, inner: Any, addresses: Sequence[str], *,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 probe: Callable[[Sequence[str]], bool] = reachable) -> None:
        self._inner = inner
        self.addresses = list(addresses)
        self.clock, self.sleep, self.probe = clock, sleep, probe

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def __aenter__(self) -> ReadRetryChannel:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._inner.__aexit__(*exc)

    def unary_unary(self, method: str, *args: Any, **kwargs: Any) -> Any:
        call = self._inner.unary_unary(method, *args, **kwargs)
        return _RetriedRead(self, call) if is_read(method) else call


class _RetriedRead:
    def __init__(self, owner: ReadRetryChannel, call: Any) -> None:
        self._owner, self._call = owner, call

    def __call__(self, request: Any, *, timeout: float | None = None, **kwargs: Any) -> Any:
        bound = NO_TIMEOUT_BOUND if timeout is None else timeout
        return self._attempts(request, self._owner.clock() + bound, kwargs)

    async def _attempts(self, request: Any, deadline: float, kwargs: dict[str, Any]) -> Any:
        o = self._owner
        pause = FIRST_PAUSE
        last: grpc.aio.AioRpcError | None = None
        while True:
            left = max(0.001, deadline - o.clock())
            try:
                return await self._call(request, timeout=left, **kwargs)
            except grpc.aio.AioRpcError as err:
                if last is not None and err.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                    # The time ran out while waiting: what the servers said
                    # until then explains more than the deadline does.
                    raise last from None
                if not waitable(err, o.addresses, o.probe):
                    raise
                if o.clock() + pause >= deadline:
                    raise
                last = err
            await o.sleep(pause)
            pause = min(MAX_PAUSE, pause * 2)
