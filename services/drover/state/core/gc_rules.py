"""What garbage collection may remove: pure rules (no asyncio, no etcd, no clock).

The rules follow Nomad's core scheduler; ``cutoff`` is a wall-clock time in
seconds (the leader computes it from its clock and the thresholds), and an
object is *old* when it was last modified at or before it.

- **Evaluation** (Nomad's eval GC): terminal (complete, failed, canceled)
  and old. Its allocations must all be terminal and old for the evaluation
  to go; those are collected with it. Terminal, old allocations of an
  evaluation that must stay are collected anyway.
  A batch evaluation of a job that lives (exists and is neither stopped
  nor dead) goes only if each of its allocations is also of an older
  version of the job (created before the job's spec last changed), and
  only those go: the current version's terminal allocations are the job's
  record of what ran (collected, the scheduler would run them again).
  One with no allocations goes (Nomad's ``olderVersionTerminalAllocs``):
  else a live batch job registered again and again keeps an evaluation
  per register forever (the soak's, ~450 a minute: state caches and the
  etcd DB grew without bound).
- **Allocation** terminal: desired STOP or EVICT, or client COMPLETE, FAILED
  or LOST.
- **Deployment** (deployment GC): not running or paused, old, and no
  allocation refers to it any more.
- **Job** (job GC): batch or stopped, old, every evaluation terminal and
  every allocation terminal: a dead job. Collected whole, like a purge.
- **Node** (node GC): down, its status changed at or before the cutoff, and
  no live allocation on it.

Views carry just what the rules read, so the rules are testable without the
cache and the shell decodes an object only when its record already passed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

TERMINAL_EVAL = frozenset({"complete", "failed", "canceled"})
ACTIVE_DEPLOYMENT = frozenset({"running", "paused"})
_TERMINAL_DESIRED = frozenset({"stop", "evict"})
_TERMINAL_CLIENT = frozenset({"complete", "failed", "lost"})


@dataclass(frozen=True, slots=True)
class AllocView:
    desired_status: str
    client_status: str
    modified: float
    create_index: int = 0


@dataclass(frozen=True, slots=True)
class JobView:
    type: str
    stop: bool
    status: str
    #: The revision of the job's last spec change (Nomad's JobModifyIndex).
    job_modify_index: int = 0


def alloc_terminal(a: AllocView) -> bool:
    return a.desired_status in _TERMINAL_DESIRED or a.client_status in _TERMINAL_CLIENT


def alloc_collectable(a: AllocView, cutoff: float) -> bool:
    return alloc_terminal(a) and a.modified <= cutoff


def job_alive(job: JobView | None) -> bool:
    return job is not None and not job.stop and job.status != "dead"


def eval_verdict(
    status: str, eval_type: str, modified: float, job: JobView | None,
    allocs: Iterable[AllocView], cutoff: float,
) -> tuple[bool, list[int]]:
    """(the evaluation goes, the positions in ``allocs`` that go)."""
    allocs = list(allocs)
    gone = [i for i, a in enumerate(allocs) if alloc_collectable(a, cutoff)]
    if eval_type == "batch" and job is not None and job_alive(job):
        # Only older versions' allocations (module doc).
        gone = [i for i in gone if allocs[i].create_index < job.job_modify_index]
    if status not in TERMINAL_EVAL or modified > cutoff:
        return False, gone
    return len(gone) == len(allocs), gone


def deployment_collectable(status: str, modified: float, referenced: bool,
                           cutoff: float) -> bool:
    return status not in ACTIVE_DEPLOYMENT and modified <= cutoff and not referenced


def job_collectable(job: JobView, modified: float, eval_statuses: Iterable[str],
                    allocs: Iterable[AllocView], cutoff: float) -> bool:
    """A dead job: batch or stopped, old, nothing of it still live."""
    if not (job.type == "batch" or job.stop) or modified > cutoff:
        return False
    return (all(s in TERMINAL_EVAL for s in eval_statuses)
            and all(alloc_terminal(a) for a in allocs))


def node_collectable(status: str, status_changed: float, live_allocs: int,
                     cutoff: float) -> bool:
    return status == "down" and status_changed <= cutoff and live_allocs == 0
