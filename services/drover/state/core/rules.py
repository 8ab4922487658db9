"""The rules a write must respect: named pure functions, errors named by cause.

Each rule reads the :class:`~drover.state.core.view.View` (or only the
request) and either passes, adds the compares that make it hold inside
the txn, or raises. Refusals that a stale view could cause wrongly
(something not yet seen) go through :func:`~drover.state.core.view.refuse`,
so the shell re-plans on a fresh view before the caller hears of them.

- broker paused: evaluations are deleted only while the eval broker is
  paused, and the delete compares the scheduler config's revision (an
  un-pause mid-call wins);
- leader fences: broker outcomes, deployment status, stable versions and
  GC are leader-only writes; they need a fence on an election key of this
  keyspace (the writer adds its compare to the txn);
- preconditions on what the caller last saw: ``modify_index`` of an
  evaluation update or of a deployment update, a job's
  ``job_modify_index`` with ``enforce_index``, the scheduler config's
  ``cas_index``;
- creates never update (compared absent) and updates never create
  (the object must exist, compared on the revision the caller saw);
- referential checks: an allocation's job and deployment exist (compared
  on their create revision) and the deployment belongs to the job;
- version bumps: every spec change is a new version (:func:`next_version`);
- sizes: at most ``max_txn_ops - 1`` objects per request: 127
  (:data:`MAX_OBJECT_OPS`) at etcd's default ``--max-txn-ops``, more where
  the cluster raises it and the replica is told so.
"""

from __future__ import annotations

from typing import Any

from drover.api.types.v1 import evaluation_pb2
from drover.coord.kv import MAX_TXN_OPS, objects_per_txn
from drover.errors import (
    EvaluationChanged,
    EvaluationExists,
    EvaluationGone,
    FenceRequired,
    InvalidArgument,
    NotFound,
)
from drover.state.core import codec
from drover.state.core.plan import PlanBuilder
from drover.state.core.view import Found, View, refuse, scheduler_config
from drover.state.errors import (
    BrokerNotPaused,
    DeploymentChanged,
    JobModifyIndexMismatch,
)

#: Objects one request may write at etcd's default ``--max-txn-ops`` (less
#: the revision marker): the API's floor, which every cluster accepts. A
#: cluster that raises ``--max-txn-ops`` (and tells the state service:
#: ``--state-max-txn-ops``) accepts ``max_txn_ops - 1``; a refusal names the
#: replica's cap in its ErrorInfo (``max_objects``), so a client can size
#: its requests to it (the eval broker's writer does).
MAX_OBJECT_OPS = objects_per_txn(MAX_TXN_OPS)
#: etcd caps compares per txn like ops (the revision marker needs none).
MAX_COMPARES = MAX_TXN_OPS

#: Statuses only the broker leader (an ack's outcome) or the watcher writes.
OUTCOMES = frozenset({
    evaluation_pb2.EVALUATION_STATUS_COMPLETE,
    evaluation_pb2.EVALUATION_STATUS_FAILED,
    evaluation_pb2.EVALUATION_STATUS_CANCELED,
})


# -- request-level ------------------------------------------------------------

def within_cap(objects: int, what: str, cap: int = MAX_OBJECT_OPS) -> None:
    """One request writes at most ``cap`` objects (:attr:`WriteContext.max_objects`).

    The refusal's metadata names the cap (``max_objects``): what a client
    that does not know the cluster's ``--max-txn-ops`` sizes its next
    requests to."""
    if objects > cap:
        raise InvalidArgument(
            f"{what} writes {objects} objects; one request to this cluster may write at most "
            f"{cap} (split it)", metadata={"field": what, "max_objects": str(cap)},
        )


def leader_fence(leader_key: str | None, base: str, what: str) -> None:
    """A leader-only write carries a fence on an election key of this keyspace.

    Only a leader holds an election key, and the txn then proves it still
    holds it; a fence naming any other key (an object's, whose create_index
    a client can read) proves nothing and is refused as well."""
    if leader_key is None:
        raise FenceRequired(
            f"{what} may only be written by a leader: the call needs a "
            "drover-fence (leader key and term)", metadata={"field": "drover-fence"})
    if not leader_key.startswith(f"{base}election/"):
        raise FenceRequired(f"{what} needs a fence on an election key of this cluster",
                            metadata={"field": "drover-fence"})


# -- on the view ----------------------------------------------------------------

def broker_paused(view: View) -> int:
    """Deletes need the eval broker paused; the config's mod revision to compare."""
    cfg, mod = scheduler_config(view)
    if not cfg.pause_eval_broker:
        raise BrokerNotPaused(
            "evaluations may only be deleted while the eval broker is paused: run "
            "`drover operator scheduler pause` (or SetSchedulerConfig with "
            "pause_eval_broker=true), delete, then resume",
        )
    return mod


def next_version(current: Any | None) -> int:
    """Version bumps: a job's first version is 0; every spec change (a new
    spec, a stop, a revert) is the current version + 1, never reused (the
    version records are immutable history)."""
    return 0 if current is None else int(current.version) + 1


def cas_holds(cas_index: int | None, mod: int) -> bool:
    """A check-and-set on what the caller last saw (None: no CAS asked)."""
    return cas_index is None or cas_index == mod


def job_index_matches(view: View, job_id: str, current: Found | None, expected: int) -> None:
    """``enforce_index`` (``job run -check-index``): the job's
    ``job_modify_index`` is what the caller saw, 0 meaning "the job must be
    new". Nomad's words; the current index (0: no such job) in the metadata
    (``job_modify_index``) so a client can re-plan without another read."""
    have = current.obj.job_modify_index if current else 0
    if have == expected:
        return
    prefix = f"Enforcing job modify index {expected}"
    if expected == 0:
        why = "job already exists"
    elif current is None:
        why = "job does not exist"
    else:
        why = f"job exists with conflicting job modify index: {have}"
    refuse(view, JobModifyIndexMismatch(
        f"{prefix}: {why} (job {job_id!r}; re-plan and run with --check-index {have})",
        metadata={"field": "job_modify_index", "job_modify_index": str(have)}))


def update_of_seen(view: View, ev: Any) -> None:
    """An evaluation update applies to the evaluation at ``ev.modify_index``:
    gone means deleted (never re-created), another index means changed.

    Judged on a fresh view only: the txn compares the caller's index, not
    the view's, so on a stale view the compares decide, and a conflict
    brings the fresh view that names the cause."""
    if not view.fresh:
        return
    mod = view.mod(codec.EVALUATIONS, ev.namespace, ev.id)
    meta = {"eval_id": ev.id}
    if mod == 0:
        raise EvaluationGone(
            f"evaluation {ev.id!r} no longer exists (deleted); nothing was written",
            metadata=meta)
    if mod != ev.modify_index:
        current = view.get(codec.EVALUATIONS, ev.namespace, ev.id)
        status = evaluation_pb2.EvaluationStatus.Name(current.obj.status if current else 0)
        raise EvaluationChanged(
            f"evaluation {ev.id!r} changed since index {ev.modify_index} (it is at "
            f"{mod}, {status}); nothing was written",
            metadata={**meta, "modify_index": str(mod), "status": status})


def create_is_new(view: View, ev: Any) -> None:
    """A create names a new evaluation id (compared absent in the txn, which
    decides on a stale view: judged here on a fresh one only)."""
    if view.fresh and view.mod(codec.EVALUATIONS, ev.namespace, ev.id):
        raise EvaluationExists(
            f"evaluation {ev.id!r} exists already; a create needs a new id",
            metadata={"eval_id": ev.id})


def deployment_seen(view: View, ns: str, dep_id: str, modify_index: int) -> Found:
    """The deployment exists and is at the index the caller based its update on."""
    found = view.get(codec.DEPLOYMENTS, ns, dep_id)
    if found is None:
        raise NotFound(f"deployment {dep_id!r} not found in namespace {ns!r}")
    if found.mod != modify_index:
        raise DeploymentChanged(
            f"deployment {dep_id!r} is at index {found.mod}, not {modify_index};"
            " re-read it and retry", metadata={"index": str(found.mod)})
    return found


def existing(view: View, kind: str, ns: str, oid: str, what: str) -> Found:
    """Updates never create: the object must exist (NOT_FOUND otherwise)."""
    found = view.get(kind, ns, oid)
    if found is None:
        where = f" in namespace {ns!r}" if ns != codec.GLOBAL_NS else ""
        raise NotFound(f"{what} {oid!r} not found{where}")
    return found


def allocation_owners(view: View, allocs: list[Any], plan: PlanBuilder) -> None:
    """The job (hence the namespace) and deployment of every allocation
    exist, and the deployment is the job's; compared on their create
    revision, so a purge racing this write aborts it instead of leaving
    allocations of nothing."""
    for i, a in enumerate(allocs):
        owners = [(codec.JOBS, a.job_id, "job", "job_id")]
        if a.deployment_id:
            owners.append((codec.DEPLOYMENTS, a.deployment_id, "deployment", "deployment_id"))
        for kind, oid, what, field in owners:
            found = view.get(kind, a.namespace, oid)
            if found is None:
                raise NotFound(
                    f"allocations[{i}]: {what} {oid!r} not found in namespace "
                    f"{a.namespace!r}", metadata={"field": f"allocations[{i}].{field}"})
            if kind == codec.DEPLOYMENTS and found.obj.job_id != a.job_id:
                raise InvalidArgument(
                    f"allocations[{i}]: deployment {oid!r} belongs to job "
                    f"{found.obj.job_id!r}, not {a.job_id!r}",
                    metadata={"field": f"allocations[{i}].deployment_id"})
            plan.compare_created(kind, a.namespace, oid, found.create)
