"""How many writes one plan may hold: one etcd txn of this cluster's.

SubmitPlan is one etcd txn, so a plan writes at most what etcd's
``--max-txn-ops`` allows, less what the state service adds to it: the
revision marker (:func:`drover.coord.kv.objects_per_txn`) and the job's
status and summary (:data:`FOLLOWING_WRITES`). A plan over the state
replica's cap is refused before anything is written (INVALID_ARGUMENT,
ErrorInfo metadata ``max_objects``).

A plan is also one request, and every map or repeated field of a request
holds at most :data:`~drover.validation.limits.Limits.max_repeated` entries
(the validation's one home of the cap; INVALID_ARGUMENT with ErrorInfo
``max_entries`` above it). A plan's entries -- its placements, its updates,
the nodes it places on (``node_indexes``) and the allocations it updates
(``alloc_indexes``; the rest of the job's set travels as ``job_allocs``,
two numbers) -- are each at most its writes, so a plan capped at
``min(writes, entries)`` fits both, whatever the job's or the cluster's
size (:func:`plan_cap`).

The worker is told the cluster's ``--max-txn-ops`` as the services are
(``drover worker --max-txn-ops``; `drover dev` passes the 1,024 its etcd
runs with, etcd's default is 128): larger plans mean fewer plans, and each
plan has a fixed cost (the delivery check, a synced view, the reads it was
computed on). A replica that answers with a smaller cap wins: the worker
plans to that from then on (:func:`refused_cap`).
"""

from __future__ import annotations

from collections.abc import Iterable

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2
from drover.coord.kv import MAX_TXN_OPS, objects_per_txn
from drover.errors import DroverError, Kind
from drover.validation.limits import DEFAULT_LIMITS

__all__ = ["DEFAULT_PLAN_ENTRIES", "DEFAULT_PLAN_OBJECTS", "FOLLOWING_WRITES", "entries_cap",
           "job_alloc_set", "plan_cap", "plan_objects", "refused_cap", "written_cap"]

#: Entries of one map or repeated field of a request, until a refusal
#: names a smaller cap.
DEFAULT_PLAN_ENTRIES = min(DEFAULT_LIMITS.max_repeated, DEFAULT_LIMITS.max_map_entries)

#: Written by the state service with every plan besides the plan's own
#: objects: the job's status and its summary.
FOLLOWING_WRITES = 2


def plan_objects(max_txn_ops: int) -> int:
    """A plan's writes (allocations, evaluations, a usage record per node)
    when etcd caps a txn at ``max_txn_ops``."""
    return objects_per_txn(max_txn_ops) - FOLLOWING_WRITES


#: At etcd's default ``--max-txn-ops``, which every cluster accepts.
DEFAULT_PLAN_OBJECTS = plan_objects(MAX_TXN_OPS)


def written_cap(err: DroverError) -> int | None:
    """The objects one write may carry, as a refusal for size names them
    (its ``max_objects``), or None when ``err`` is another refusal."""
    if err.kind is not Kind.INVALID_ARGUMENT:
        return None
    try:
        return int(err.metadata.get("max_objects", ""))
    except ValueError:
        return None


def refused_cap(err: DroverError) -> int | None:
    """The plan size a refusal for size asks for (its :func:`written_cap`
    less :data:`FOLLOWING_WRITES`), or None when ``err`` is another refusal."""
    cap = written_cap(err)
    return None if cap is None else max(1, cap - FOLLOWING_WRITES)


def entries_cap(err: DroverError) -> int | None:
    """The entries one field of a request may hold, as a refusal for a
    collection's size names them (``max_entries``), or None."""
    if err.kind is not Kind.INVALID_ARGUMENT:
        return None
    try:
        return max(1, int(err.metadata.get("max_entries", "")))
    except ValueError:
        return None


def plan_cap(objects: int, entries: int) -> int:
    """The most writes a plan may hold: within the txn (``objects``, usage
    records counted) and, as each of its collections is at most its
    writes, within a request's ``entries``."""
    return max(1, min(objects, entries))


def job_alloc_set(allocs: Iterable[allocation_pb2.Allocation]) -> state_pb2.JobAllocSet:
    """The job's allocations as read, for SubmitPlan's ``job_allocs``: how
    many, and the highest create index (module doc)."""
    count, newest = 0, 0
    for a in allocs:
        count += 1
        newest = max(newest, a.create_index)
    return state_pb2.JobAllocSet(count=count, max_create_index=newest)
