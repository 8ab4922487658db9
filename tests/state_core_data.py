"""A :class:`View` built from plain protos (no etcd, no asyncio): the
objects are put into the cache's own pure :class:`Tables` at the given
revisions and read through :class:`CacheView`, the adapter the shell uses;
and the few objects the planner tests start from (:func:`service_job`,
:func:`stored`, :func:`ready_node`)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from drover.api.types.v1 import job_pb2, node_pb2
from drover.coord.keys import Keyspace
from drover.state.core import codec
from drover.state.core.cache_view import CacheView
from drover.state.core.plan import WriteContext
from drover.state.core.tables import Tables
from drover.state.core.validate import validate_job

KEYS = codec.KeyCodec(Keyspace("/t/drover"))
NOW = Timestamp(seconds=1_700_000_000)


def key(kind: str, ns: str, oid: str) -> bytes:
    return KEYS.key(kind, ns, oid)


def context() -> WriteContext:
    """A context whose new ids are id-1, id-2, ... (reproducible plans)."""
    counter = itertools.count(1)
    return WriteContext(KEYS, NOW, lambda: f"id-{next(counter)}")


def view(objects: Iterable[tuple[str, Any, int, int]], *, fresh: bool = True) -> CacheView:
    """``objects``: (kind, message, create revision, mod revision)."""
    t = tables(objects)
    return CacheView(t, t.revision, fresh)


def tables(objects: Iterable[tuple[str, Any, int, int]]) -> Tables:
    """Cache tables holding ``objects`` (as :func:`view` takes them)."""
    tables = Tables(KEYS)
    for kind, msg, create, mod in objects:
        ns = codec.namespace_of(kind, msg)
        if kind == codec.NODE_USAGE:
            oid = msg.node_id
        elif kind == codec.SCHEDULER_CONFIG:
            oid = codec.SCHEDULER_CONFIG_ID
        elif kind == codec.JOB_VERSIONS:
            oid = f"{msg.id}/{msg.version:020d}"
        else:
            oid = msg.id
        tables.apply(KEYS.key(kind, ns, oid), codec.encode(msg), create, mod, False)
    return tables


def service_job(count: int = 2, update: bool = True) -> job_pb2.Job:
    job = job_pb2.Job(id="web", datacenters=["dc1"])
    tg = job.task_groups.add(name="g", count=count)
    if update:
        tg.update.max_parallel = 1
    return validate_job(job)


def stored(job: job_pb2.Job, version: int) -> job_pb2.Job:
    out = job_pb2.Job()
    out.CopyFrom(job)
    out.version = version
    return out


def ready_node(**kw: object) -> node_pb2.Node:
    n = node_pb2.Node(id="n1", status=node_pb2.NODE_STATUS_READY, **kw)  # type: ignore[arg-type]
    n.resources.cpu, n.resources.memory_mb = 1000, 1000
    return n
