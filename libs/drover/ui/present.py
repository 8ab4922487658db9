"""How objects read on the pages (pure): names, short ids, summaries, progress.

The words are the CLI's (``running``, ``dead (stopped)``, ``healthy``), from
the same helpers, so a page and a terminal never disagree. These are the
templates' filters (:func:`filters`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from google.protobuf.timestamp_pb2 import Timestamp

from drover.api.types.v1 import (
    allocation_pb2,
    deployment_pb2,
    evaluation_pb2,
    job_pb2,
    node_pb2,
)
from drover.cli.output import enum_name, short_id

#: A job's allocation summary, in Nomad's order (its UI's summary bar).
SUMMARY_STATES = ("queued", "starting", "running", "failed", "complete", "lost")


def short(value: str) -> str:
    """An id as the CLI's tables show it: a UUID cut to 8 characters (Nomad's
    shortId), a name (``sim-12``, a job id) whole."""
    return short_id(value)


def job_status(job: job_pb2.Job) -> str:
    """``running``, ``pending``, ``dead``; ``dead (stopped)`` for a stopped job."""
    text = enum_name(job.status, job_pb2.JobStatus)
    return f"{text} (stopped)" if job.stop else text


def job_type(job: job_pb2.Job) -> str:
    return enum_name(job.type, job_pb2.JobType)


def summary(job: job_pb2.Job) -> dict[str, int]:
    """The job's allocations by client status, every group added up."""
    out = dict.fromkeys(SUMMARY_STATES, 0)
    for group in job.summary.values():
        for state in SUMMARY_STATES:
            out[state] += getattr(group, state)
    return out


def client_status(alloc: allocation_pb2.Allocation) -> str:
    return enum_name(alloc.client_status, allocation_pb2.AllocClientStatus)


def desired_status(alloc: allocation_pb2.Allocation) -> str:
    return enum_name(alloc.desired_status, allocation_pb2.AllocDesiredStatus)


def health(alloc: allocation_pb2.Allocation) -> str:
    """``healthy``/``unhealthy`` once the deployment judged it, else empty."""
    if not alloc.deployment_status.HasField("healthy"):
        return ""
    return "healthy" if alloc.deployment_status.healthy else "unhealthy"


def deployment_status(d: deployment_pb2.Deployment) -> str:
    return enum_name(d.status, deployment_pb2.DeploymentStatus)


def deployment_active(d: deployment_pb2.Deployment | None) -> bool:
    return d is not None and d.status in (deployment_pb2.DEPLOYMENT_STATUS_RUNNING,
                                          deployment_pb2.DEPLOYMENT_STATUS_PAUSED)


def needs_promotion(d: deployment_pb2.Deployment | None) -> bool:
    """An active deployment with a canary group not yet promoted (Nomad's
    "Deployment requires promotion")."""
    return deployment_active(d) and any(
        g.desired_canaries and not g.promoted for g in d.task_groups.values())  # type: ignore[union-attr]


def group_progress(d: deployment_pb2.Deployment) -> list[dict[str, Any]]:
    """One row per task group: what the deployment placed and judged so far."""
    rows = []
    for name, g in sorted(d.task_groups.items()):
        rows.append({
            "name": name, "desired": g.desired_total, "placed": g.placed_allocs,
            "healthy": g.healthy_allocs, "unhealthy": g.unhealthy_allocs,
            "canaries": f"{len(g.placed_canaries)}/{g.desired_canaries}",
            "promoted": ("yes" if g.promoted else "no") if g.desired_canaries else "N/A",
            "percent": percent(g.healthy_allocs, g.desired_total),
            "canary_ids": list(g.placed_canaries),
        })
    return rows


def percent(part: int, whole: int) -> int:
    """``part`` of ``whole`` in whole percent, 0..100 (0 of 0 is 0)."""
    if whole <= 0:
        return 0
    return max(0, min(100, part * 100 // whole))


def eval_status(e: evaluation_pb2.Evaluation) -> str:
    return enum_name(e.status, evaluation_pb2.EvaluationStatus)


def node_status(n: node_pb2.Node) -> str:
    return enum_name(n.status, node_pb2.NodeStatus)


def eligibility(n: node_pb2.Node) -> str:
    return enum_name(n.scheduling_eligibility, node_pb2.NodeSchedulingEligibility)


def eligible(n: node_pb2.Node) -> bool:
    return n.scheduling_eligibility != node_pb2.NODE_SCHEDULING_ELIGIBILITY_INELIGIBLE


def drain_text(n: node_pb2.Node, remaining: int) -> str:
    """Nomad's drain column: ``draining (N left)``, the last drain's outcome,
    or empty for a node never drained."""
    if n.drain:
        return f"draining ({remaining} left)"
    if n.HasField("last_drain") and n.last_drain.status:
        return enum_name(n.last_drain.status, node_pb2.DrainStatus)
    return ""


def when(ts: Timestamp | None, now: datetime | None = None) -> str:
    """A timestamp as ``2026-11-28 14:03:07`` UTC (empty when unset)."""
    if ts is None or not ts.ByteSize():
        return ""
    at = ts.ToDatetime(tzinfo=UTC)
    return at.strftime("%Y-%m-%d %H:%M:%S")


def filters() -> dict[str, Callable[..., Any]]:
    """Every helper above, by name, for the template environment."""
    return {f.__name__: f for f in (
        short, job_status, job_type, client_status, desired_status, health,
        deployment_status, eval_status, node_status, eligibility, when)}


def globals_() -> dict[str, Callable[..., Any]]:
    """Functions the templates call (not filters)."""
    return {"link": link}


def counts_by(items: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        out[item] = out.get(item, 0) + 1
    return out


def link(base: str, params: Mapping[str, str], **changes: str) -> str:
    """``base`` with ``params`` as its query, ``changes`` applied (an empty
    value drops the field): the pager's and filters' links."""
    merged = {**params, **changes}
    query = urlencode([(k, v) for k, v in sorted(merged.items()) if v])
    return f"{base}?{query}" if query else base
