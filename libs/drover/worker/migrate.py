"""Allocations marked to migrate (pure; the planner's hook).

Nomad's reconciler puts an allocation whose ``desired_transition.migrate``
is set into its ``migrate`` set: it is stopped ("alloc is being migrated")
and a replacement placed in the same plan, with the same name and
``previous_allocation`` naming it (the stopped one's ``next_allocation``
names the replacement, as Nomad's state store links them). The node drainer
marks allocations so; ``nomad alloc stop`` (Nomad's ``Alloc.Stop``) is such
a migration too, for every job type. As Nomad's scheduler does, the stop
goes only with a placement: an allocation with nowhere to go keeps running
(the plan reports it queued; a blocked evaluation waits for room). The
drainer decides how many move at once (``migrate.max_parallel``); the
planner moves exactly the marked ones, never more.

A batch allocation the drainer marked (its drain's deadline) also carries
``migrate_disable_placement`` (Nomad's ``MigrateDisablePlacement``, set by
``drainAllocs``): it is stopped and not replaced, its slot still counted.
System jobs are planned by :mod:`.system`, which reads the same mark.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from drover.api.types.v1 import allocation_pb2, job_pb2

WHY = "alloc is being migrated"


def marked(a: allocation_pb2.Allocation) -> bool:
    """The drainer or an operator's ``alloc stop`` asked for this allocation
    to move."""
    return a.desired_transition.migrate


def replaced(a: allocation_pb2.Allocation) -> bool:
    """A marked allocation gets a replacement (all but a drained batch one:
    Nomad's ``ShouldDisableMigrationPlacement``)."""
    return not a.desired_transition.migrate_disable_placement


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
    #: Slots the migrations hold: a replacement placed, or a drained batch
    #: allocation stopped without one (its slot is not refilled).
    held: int = 0


def migrate(b: Builder, job: job_pb2.Job, tg: job_pb2.TaskGroup,
            allocs: Sequence[allocation_pb2.Allocation], dep_id: str,
            name_index: dict[str, int]) -> Moved:
    """Stop each marked allocation and place its replacement (service and
    batch jobs; a drained batch allocation is only stopped)."""
    out = Moved()
    for a in allocs:
        again = replaced(a)
        if not b.room_for(2 if again else 1):  # the rest in a follow-up evaluation
            out.kept.append(a)
            continue
        if not b.stop(a, WHY):
            out.kept.append(a)
            continue
        if not again:
            out.held += 1
            continue
        if b.place(job, tg, name_index[a.id], dep_id, previous=a.id):
            b.link_last()
            out.held += 1
        else:
            b.undo_stop(a)  # nowhere to go: it keeps running
            out.kept.append(a)
    return out
