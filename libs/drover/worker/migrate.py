"""Allocations the node drainer marked to migrate (pure; the planner's hook).

Nomad's reconciler puts an allocation whose ``desired_transition.migrate``
is set into its ``migrate`` set: it is stopped ("alloc is being migrated")
and a replacement placed in the same plan, with the same name and
``previous_allocation`` naming it (the stopped one's ``next_allocation``
names the replacement, as Nomad's state store links them). ``nomad alloc
stop`` is such a migration too. As Nomad's scheduler does, the stop goes
only with a placement: an allocation with nowhere to go keeps running (the
plan reports it queued; a blocked evaluation waits for room). The drainer
decides how many move at once (``migrate.max_parallel``); the planner moves
exactly the marked ones, never more.

A batch or system allocation marked to migrate (the drain's deadline, or a
system job drained last) is stopped and not replaced (Nomad's
``MigrateDisablePlacement``; the system scheduler never places on a
draining node).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from drover.api.types.v1 import allocation_pb2, job_pb2

WHY = "alloc is being migrated"


def marked(a: allocation_pb2.Allocation) -> bool:
    """The drainer asked for this allocation to move."""
    return a.desired_transition.migrate


class Builder(Protocol):
    """What the hook needs of the planner's plan builder."""

    max_ops: int

    def stop(self, a: allocation_pb2.Allocation, why: str) -> bool: ...

    def place(self, job: job_pb2.Job, tg: job_pb2.TaskGroup, index: int, dep_id: str,
              canary: bool = False, previous: str = "") -> bool: ...

    def ops(self) -> int: ...

    def undo_stop(self, a: allocation_pb2.Allocation) -> None: ...

    def room_for(self, ops: int) -> bool: ...

    def link_last(self) -> None: ...


@dataclass
class Moved:
    #: Marked allocations that stay (nowhere to go, or no room left in this
    #: plan: then the plan says ``more`` and a follow-up evaluation moves them).
    kept: list[allocation_pb2.Allocation] = field(default_factory=list)
    #: Slots the migrations hold: a replacement placed, or a batch/system
    #: allocation stopped without one (its slot is not refilled).
    held: int = 0


def migrate(b: Builder, job: job_pb2.Job, tg: job_pb2.TaskGroup,
            allocs: Sequence[allocation_pb2.Allocation], dep_id: str,
            name_index: dict[str, int]) -> Moved:
    """Stop each marked allocation and place its replacement (service jobs)."""
    out = Moved()
    service = job.type in (job_pb2.JOB_TYPE_SERVICE, job_pb2.JOB_TYPE_UNSPECIFIED)
    for a in allocs:
        if not b.room_for(2 if service else 1):  # the rest in a follow-up evaluation
            out.kept.append(a)
            continue
        if not b.stop(a, WHY):
            out.kept.append(a)
            continue
        if not service:
            out.held += 1
            continue
        if b.place(job, tg, name_index[a.id], dep_id, previous=a.id):
            b.link_last()
            out.held += 1
        else:
            b.undo_stop(a)  # nowhere to go: it keeps running
            out.kept.append(a)
    return out
