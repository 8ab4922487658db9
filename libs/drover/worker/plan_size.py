"""How many writes one plan may hold: one etcd txn of this cluster's.

SubmitPlan is one etcd txn, so a plan writes at most what etcd's
``--max-txn-ops`` allows, less what the state service adds to it: the
revision marker (:func:`drover.coord.kv.objects_per_txn`) and the job's
status and summary (:data:`FOLLOWING_WRITES`). A plan over the state
replica's cap is refused before anything is written (INVALID_ARGUMENT,
ErrorInfo metadata ``max_objects``).

The worker is told the cluster's ``--max-txn-ops`` as the services are
(``drover worker --max-txn-ops``; `drover dev` passes the 1,024 its etcd
runs with, etcd's default is 128): larger plans mean fewer plans, and each
plan has a fixed cost (the delivery check, a synced view, the reads it was
computed on). A replica that answers with a smaller cap wins: the worker
plans to that from then on (:func:`refused_cap`).
"""

from __future__ import annotations

from drover.coord.kv import MAX_TXN_OPS, objects_per_txn
from drover.errors import DroverError, Kind

__all__ = ["DEFAULT_PLAN_OBJECTS", "FOLLOWING_WRITES", "plan_objects", "refused_cap",
           "written_cap"]

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
