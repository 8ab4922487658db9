"""Queued watcher decisions of one deployment merged into one write (pure).

The shell writes one deployment's decisions in order, one write in flight
(:mod:`..results`). Under a wave of allocation events (placements, health
reports) the watcher takes a decision per event while the previous write is
still in flight, so the queue grows and each decision cost one
UpdateDeployment txn: about two per placed allocation. Decisions carry new
values, not deltas (:mod:`.effects`), so the decisions waiting behind the
one being written can be applied together, in one write with the same end
state: the later status, description and stable version win; task groups
are the earlier ones with the later ones replacing them by name; allocation
health is the union, a later verdict on the same allocation winning.

Not merged (written on their own, in order): a decision with a job revert
(its own register-with-index compare), one still holding a ``follow_up``
(the manager hands those to the batcher, never to the writer), one with
marks to reschedule (each goes once, with its own evaluation), and
decisions with different allocation-health namespaces.

Follow-up evaluations: two "place the next batch" evaluations of the same
deployment collapse to the later one. The scheduler reads the current state
when it runs, and the broker keeps at most one evaluation per job in flight
anyway, so the earlier one would only be cancelled as redundant.

A decision that only moves counts (:func:`can_wait`) may wait for the ones
behind it, up to the progress window: under a wave of health reports a
deployment's placed and healthy counts change with every stream response,
and nothing acts on the stored counts but people and a new leader (which
re-derives them from the allocations). Everything that someone or something
acts on -- a status, a promotion, an evaluation, allocation health, a job
revert or stable mark, marks to reschedule -- is written at once, and a
waiting decision merged with it goes along.
"""

from __future__ import annotations

import dataclasses

from .effects import Decision, DeploymentUpdate, UpdateAllocHealth

__all__ = ["can_wait", "merge"]


def merge(first: Decision, then: Decision) -> Decision | None:
    """One decision with the effect of writing ``first`` then ``then``; None
    when they must be written apart (see the module docstring)."""
    if first.deployment_id != then.deployment_id:
        return None
    if first.revert is not None or then.revert is not None:
        return None
    if first.follow_up is not None or then.follow_up is not None:
        return None
    if first.reschedule is not None or then.reschedule is not None:
        return None  # marks to reschedule go with their own evaluation, each once
    health = _health(first.alloc_health, then.alloc_health)
    if isinstance(health, bool):
        return None
    return dataclasses.replace(
        first,
        update=_update(first.update, then.update),
        evaluation=then.evaluation if then.evaluation is not None else first.evaluation,
        mark_stable=then.mark_stable if then.mark_stable is not None else first.mark_stable,
        alloc_health=health,
    )


def can_wait(decision: Decision) -> bool:
    """True when the decision's only effect is new counts (and progress
    deadlines) of a deployment whose status and promotions stay as stored."""
    return (decision.update is not None and decision.update.counts_only
            and decision.evaluation is None and decision.revert is None
            and decision.mark_stable is None and decision.alloc_health is None
            and decision.follow_up is None and decision.reschedule is None)


def _update(first: DeploymentUpdate | None,
            then: DeploymentUpdate | None) -> DeploymentUpdate | None:
    if first is None or then is None:
        return then if then is not None else first
    groups = {g.name: g for g in first.groups}
    groups.update((g.name, g) for g in then.groups)
    # The earlier base index: the compare the first write would have made.
    return dataclasses.replace(then, groups=tuple(groups.values()),
                               based_on_modify_index=first.based_on_modify_index,
                               counts_only=first.counts_only and then.counts_only)


def _health(first: UpdateAllocHealth | None,
            then: UpdateAllocHealth | None) -> UpdateAllocHealth | bool | None:
    """The union (later verdict wins); False when they cannot be merged."""
    if first is None or then is None:
        return then if then is not None else first
    if first.namespace != then.namespace:
        return False
    verdict = {i: True for i in first.healthy_ids}
    verdict.update((i, False) for i in first.unhealthy_ids)
    verdict.update((i, True) for i in then.healthy_ids)
    verdict.update((i, False) for i in then.unhealthy_ids)
    return UpdateAllocHealth(
        namespace=then.namespace,
        healthy_ids=tuple(i for i, ok in verdict.items() if ok),
        unhealthy_ids=tuple(i for i, ok in verdict.items() if not ok),
        timestamp=max(first.timestamp, then.timestamp))
