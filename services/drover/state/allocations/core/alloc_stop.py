"""StopAllocation (``nomad alloc stop``): one allocation stopped, and an
evaluation so the scheduler replaces it (pure planner).

As Nomad's ``Alloc.Stop``, a stop is a migration whatever the job's type:
the allocation is marked ``desired_transition.migrate``, in the same txn as
an ``alloc-stop`` evaluation of the job, and the scheduler stops it ("alloc
is being migrated") and places a replacement with its name,
``previous_allocation`` naming it and its ``next_allocation`` naming the
replacement (a system job's on the same node). Unlike the node drainer's
mark of a batch allocation, it does not set ``migrate_disable_placement``:
the stopped batch allocation is replaced. Compared on the allocation's and
the job's revisions, so a concurrent change re-plans; an allocation already
stopped or terminal on its client is refused (nothing to stop).
"""

from __future__ import annotations

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2
from drover.errors import NotFound
from drover.state.core import codec
from drover.state.core.plan import PlanBuilder, WriteContext, WritePlan
from drover.state.core.view import View, refuse
from drover.state.errors import AllocTerminal
from drover.state.jobs.core.job_status import alloc_terminal
from drover.state.jobs.core.register import new_eval


def plan_stop_alloc(view: View, ctx: WriteContext, ns: str, alloc_id: str) -> WritePlan:
    found = view.get(codec.ALLOCATIONS, ns, alloc_id)
    if found is None:
        refuse(view, NotFound(f"allocation {alloc_id!r} not found in namespace {ns!r}"))
    a = found.obj
    if alloc_terminal(a):
        refuse(view, AllocTerminal(
            f"allocation {alloc_id!r} is already {_status(a)}: nothing to stop",
            metadata={"desired_status": allocation_pb2.AllocDesiredStatus.Name(
                a.desired_status)}))
    job = view.get(codec.JOBS, ns, a.job_id)
    if job is None:
        refuse(view, NotFound(f"job {a.job_id!r} of allocation {alloc_id!r} not found"))
    plan = PlanBuilder(ctx.keys, ctx.on_put)
    a.desired_transition.migrate = True
    a.modify_time.CopyFrom(ctx.now)
    plan.put(codec.ALLOCATIONS, ns, a.id, a, found.mod)
    plan.compare_mod(codec.JOBS, ns, a.job_id, job.mod)
    ev = new_eval(ctx, job.obj, "alloc-stop")
    plan.put(codec.EVALUATIONS, ns, ev.id, ev, 0)
    return plan.build(lambda rev: state_pb2.StopAllocationResponse(eval_id=ev.id, index=rev),
                      conflict=f"allocation {alloc_id!r} changed concurrently; retry")


def _status(a: allocation_pb2.Allocation) -> str:
    if a.desired_status != allocation_pb2.ALLOC_DESIRED_STATUS_RUN:
        return "stopped"
    return allocation_pb2.AllocClientStatus.Name(a.client_status).removeprefix(
        "ALLOC_CLIENT_STATUS_").lower()
