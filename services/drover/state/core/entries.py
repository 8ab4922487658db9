"""An object as a cache table keeps it: an :data:`Entry` and its record (pure).

Memory is the constraint (a million evaluations in well under 1 KB each), so
a table keeps, per object, one flat tuple -- an :data:`Entry`::

    (value, mod_revision, Key(create_revision, "<namespace>/<id>"), *record)

-- the serialized proto, decoded only on read, plus the *record*: the
object's scalar fields that lists index and filters commonly test
(namespace, job, status, priority...; :data:`RECORDS`, of which
:data:`INDEXED` are indexed), extracted once per write with the filter
schema's own getters (:data:`SCHEMAS`), so an enum reads ``"pending"`` in
the index, in the fast filter path and in CEL alike. Strings in records are
interned (one copy per distinct value; :mod:`drover.state.core.records`
generates each kind's :data:`RECORD_MAKERS`). Because the record travels
with the entry, a delete or an unchanged re-put never decodes, and a filter
over record fields matches through :mod:`drover.filter`'s fast predicate
(:func:`record_getters`) with no decode at all; :func:`decoder` decodes an
entry on read, :func:`reserves` reads an allocation's room from its record.
The tables that hold entries: :mod:`drover.state.core.tables`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from drover.api.types.v1 import allocation_pb2
from drover.filter import Schema
from drover.state.core import codec
from drover.state.core.records import record_maker
from drover.worker.resources import is_live

Entry = tuple[Any, ...]
Getter = Callable[[Any], Any]
RECORD_START = 3

#: Per kind: the record fields, and which of them are indexed.
RECORDS: dict[str, tuple[str, ...]] = {
    codec.EVALUATIONS: ("namespace", "job_id", "status", "type", "triggered_by",
                        "deployment_id", "node_id", "priority"),
    codec.ALLOCATIONS: ("namespace", "job_id", "node_id", "deployment_id", "eval_id",
                        "client_status", "desired_status", "task_group", "name"),
    codec.DEPLOYMENTS: ("namespace", "job_id", "status", "job_version"),
    codec.JOBS: ("namespace", "status", "type", "priority", "name", "stop", "version"),
    codec.JOB_VERSIONS: ("job",),
    codec.NODES: ("status", "datacenter", "name", "node_class", "scheduling_eligibility",
                  "drain"),
    codec.SCHEDULER_CONFIG: (),
    codec.NODE_USAGE: (),
}  # fmt: skip
INDEXED: dict[str, tuple[str, ...]] = {
    codec.EVALUATIONS: ("namespace", "job_id", "status", "type", "triggered_by",
                        "deployment_id", "node_id"),
    codec.ALLOCATIONS: ("namespace", "job_id", "node_id", "deployment_id", "eval_id",
                        "client_status"),
    codec.DEPLOYMENTS: ("namespace", "job_id", "status"),
    codec.JOBS: ("namespace", "status", "type"),
    codec.JOB_VERSIONS: ("job",),
    codec.NODES: ("status", "datacenter"),
    codec.SCHEDULER_CONFIG: (),
    codec.NODE_USAGE: (),
}  # fmt: skip

#: Indexed fields empty on nearly every object of the kind: their "" is not
#: indexed (see :class:`drover.paging.IndexedCollection`'s ``sparse``). An
#: indexed field with one value on every object (the namespace of a
#: single-namespace cluster) keeps no bucket at all (a *uniform* index,
#: same docstring): either way only values that narrow a query are indexed.
SPARSE: dict[str, tuple[str, ...]] = {
    codec.EVALUATIONS: ("deployment_id", "node_id"),
}

#: The filter schema of each listed kind (what CEL sees of a decoded object).
SCHEMAS: dict[str, Schema] = {
    kind: Schema.for_message(msg.DESCRIPTOR) for kind, msg in codec.MESSAGES.items()
}


def _bare_id(entry: Entry) -> str:
    return str(entry[2][1]).partition("/")[2]


def _create_index(entry: Entry) -> int:
    return int(entry[2][0])


def _extractors(kind: str) -> list[Getter]:
    if kind == codec.JOB_VERSIONS:
        return [lambda m: f"{m.namespace}/{m.id}"]
    schema = SCHEMAS[kind]
    return [schema.getter(name) for name in RECORDS[kind]]


def record_getters(kind: str) -> dict[str, Getter]:
    """Fast getters over an entry: the record fields, id and the indexes."""
    getters: dict[str, Getter] = {
        name: operator.itemgetter(RECORD_START + i) for i, name in enumerate(RECORDS[kind])
    }
    getters["id"] = _bare_id
    getters["create_index"] = _create_index
    getters["modify_index"] = operator.itemgetter(1)
    return getters


#: Per kind, message -> its record (generated once: see :mod:`drover.state.core.records`).
RECORD_MAKERS: dict[str, Callable[[Any], tuple[Any, ...]]] = {
    kind: record_maker(msg.DESCRIPTOR, RECORDS[kind], _extractors(kind))
    for kind, msg in codec.MESSAGES.items()
}


_ALLOC_RECORD = RECORD_MAKERS[codec.ALLOCATIONS]
_CLIENT_STATUS = RECORDS[codec.ALLOCATIONS].index("client_status") + RECORD_START
_DESIRED_STATUS = RECORDS[codec.ALLOCATIONS].index("desired_status") + RECORD_START
#: An allocation's desired and client status as its record reads them, for
#: the ones that can be live (:func:`drover.worker.resources.is_live`).
_RUN = _ALLOC_RECORD(allocation_pb2.Allocation(
    desired_status=allocation_pb2.ALLOC_DESIRED_STATUS_RUN))[_DESIRED_STATUS - RECORD_START]
_CLIENT_TERMINAL = frozenset(
    _ALLOC_RECORD(allocation_pb2.Allocation(client_status=s))[_CLIENT_STATUS - RECORD_START]
    for s in (allocation_pb2.ALLOC_CLIENT_STATUS_COMPLETE,
              allocation_pb2.ALLOC_CLIENT_STATUS_FAILED,
              allocation_pb2.ALLOC_CLIENT_STATUS_LOST))


def reserves(entry: Entry) -> tuple[str, tuple[int, int] | None]:
    """An allocation entry's node, and what it reserves there when live
    (cpu, memory_mb), else None. Decodes only an allocation its record
    shows live."""
    if entry[_DESIRED_STATUS] != _RUN or entry[_CLIENT_STATUS] in _CLIENT_TERMINAL:
        return "", None
    a = allocation_pb2.Allocation.FromString(entry[0])
    return a.node_id, (a.resources.cpu, a.resources.memory_mb) if is_live(a) else None


def decoder(kind: str) -> Callable[[Entry], Any]:
    """Entry -> the decoded proto (with its etcd-derived indexes filled in)."""
    def decode(entry: Entry) -> Any:
        return codec.decode(kind, entry[0], entry[2][0], entry[1])
    return decode
