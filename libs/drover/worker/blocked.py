"""What a blocked evaluation waits for (pure): the worker writes it on the
evaluation so the state service unblocks it by its need and catches a
missed unblock (:mod:`drover.state.evaluations.core.unblock`)."""

from __future__ import annotations

from drover.api.types.v1 import evaluation_pb2

from .plan import Plan, Snapshot
from .resources import group_ask


def blocked_need(ev: evaluation_pb2.Evaluation, snap: Snapshot, plan: Plan,
                 index: int) -> None:
    """What a blocked evaluation waits for (the state service unblocks it
    only where that fits, and at once if it missed an unblock since
    ``index``): the job's datacenters and the component-wise smallest ask of
    the groups left queued (a lower bound: it never keeps one blocked that a
    change could place)."""
    ev.snapshot_index = index
    job = snap.job
    if job is None:
        return
    ev.blocked_datacenters.extend(job.datacenters)
    asks = [group_ask(tg) for tg in job.task_groups if plan.queued.get(tg.name)]
    if asks:
        ev.blocked_ask.cpu = min(a.cpu for a in asks)
        ev.blocked_ask.memory_mb = min(a.memory_mb for a in asks)
