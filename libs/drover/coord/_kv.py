"""Raw etcd KV/watch calls that aetcd does not expose (range with limit,
revision, sort by create, count-only, min_mod_revision; watch with filters
and full responses), plus the one retry policy for reads.

On a health-checked client (:class:`drover.coord.connect.EtcdClient`) every
call goes through its endpoint pool: reads retry on another member within
their bound, writes never retry and raise :class:`OutcomeUnknown` when they
may have been applied, streams carry etcd's require-leader metadata. Every
bound is clipped to the caller's deadline (:mod:`drover.coord.deadline`).
Other clients (plain aetcd, test doubles) keep the old path: reads retry on
UNAVAILABLE/DEADLINE_EXCEEDED with tenacity, bounded by ``deadline`` seconds.
"""

from __future__ import annotations

from typing import Any

import grpc
from aetcd import rpc
from tenacity import (
    AsyncRetrying,
    retry_if_exception,
    stop_after_delay,
    wait_exponential,
)

from drover.coord.errors import EtcdUnavailable

# the one definition (b"\0" for an all-0xff prefix, where aetcd's returned the prefix)
from drover.coord.kv import prefix_end as prefix_end

_RETRYABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


def _retryable(e: BaseException) -> bool:
    return isinstance(e, rpc.AioRpcError) and e.code() in _RETRYABLE


async def range_(
    client: Any,
    key: bytes,
    range_end: bytes = b"",
    *,
    limit: int = 0,
    revision: int = 0,
    sort_create: bool = False,
    count_only: bool = False,
    keys_only: bool = False,
    min_mod_revision: int = 0,
    serializable: bool = False,
    rpc_timeout: float = 5.0,
    deadline: float = 0.0,
) -> Any:
    """One RangeRequest (linearizable unless ``serializable``); retried on
    UNAVAILABLE for up to ``deadline`` seconds (0: no retry)."""
    await client.connect()
    req = rpc.RangeRequest(
        key=key,
        range_end=range_end,
        limit=limit,
        revision=revision,
        count_only=count_only,
        keys_only=keys_only,
        min_mod_revision=min_mod_revision,
        serializable=serializable,
    )
    if sort_create:
        req.sort_target = rpc.RangeRequest.CREATE
        req.sort_order = rpc.RangeRequest.ASCEND
    pool = getattr(client, "pool", None)
    if pool is not None:
        return await pool.unary("kv", "Range", req, timeout=max(rpc_timeout, deadline),
                                idempotent=True, what="range")
    try:
        async for attempt in AsyncRetrying(
            stop=stop_after_delay(deadline),
            wait=wait_exponential(multiplier=0.05, max=1.0),
            retry=retry_if_exception(_retryable),
            reraise=True,
        ):
            with attempt:
                return await client.kvstub.Range(req, timeout=rpc_timeout)
    except rpc.AioRpcError as e:
        raise EtcdUnavailable(f"etcd range failed: {e.code().name}: {e.details()}") from e
    raise AssertionError("unreachable")


async def txn(client: Any, request: Any, *, rpc_timeout: float = 5.0) -> Any:
    """One Txn, never retried (:class:`OutcomeUnknown` if it may have applied)."""
    await client.connect()
    pool = getattr(client, "pool", None)
    if pool is not None:
        return await pool.unary("kv", "Txn", request, timeout=rpc_timeout, idempotent=False,
                                what="txn")
    try:
        return await client.kvstub.Txn(request, timeout=rpc_timeout)
    except rpc.AioRpcError as e:
        raise EtcdUnavailable(f"etcd txn failed: {e.code().name}: {e.details()}") from e


def watch_create(
    key: bytes,
    range_end: bytes,
    start_revision: int,
    *,
    no_put: bool = False,
    progress_notify: bool = False,
    watch_id: int = 0,
) -> Any:
    create = rpc.WatchCreateRequest(
        key=key,
        range_end=range_end,
        start_revision=start_revision,
        progress_notify=progress_notify,
        watch_id=watch_id,
    )
    if no_put:
        create.filters.append(rpc.WatchCreateRequest.FilterType.NOPUT)
    return rpc.WatchRequest(create_request=create)


async def open_watch(client: Any, request: Any) -> Any:
    """A Watch stream with one create request written; iterate it for responses."""
    await client.connect()
    pool = getattr(client, "pool", None)
    if pool is not None:
        stream = pool.open_stream("watch", "Watch")
        await stream.write(request)
        return stream
    call = client.watchstub.Watch() if hasattr(client, "watchstub") else (
        rpc.WatchStub(client.channel).Watch())
    await call.write(request)
    return call
