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

A decision may wait for the ones behind it (:func:`hold_for`). Under a wave
of health reports a deployment's placed and healthy counts change with
every stream response. Nothing acts on the stored counts but people and a
new leader (which re-derives them from the allocations), so a write of
counts alone waits up to the progress window. One that also asks for the
next batch waits the batch window: the scheduler then places what became
healthy meanwhile in one evaluation rather than one per response (Nomad
batches a job's deployment evaluations too). Everything else someone acts
on -- a status, a promotion, an evaluation a caller or a status change
needs, allocation health, a job revert or stable mark, marks to
reschedule -- is written at once, and a waiting decision merged with it
goes along.
"""

from __future__ import annotations

import dataclasses

from drover.deployments.config import BatcherConfig

from .effects import Decision, DeploymentUpdate, UpdateAllocHealth

__all__ = ["hold_for", "merge"]


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
        evaluation_follows_up=_follows_up(first) and _follows_up(then),
        mark_stable=then.mark_stable if then.mark_stable is not None else first.mark_stable,
        alloc_health=health,
    )


def hold_for(decision: Decision, config: BatcherConfig) -> float:
    """How long the decision may wait for the ones behind it: the progress
    window when it only moves counts (and progress deadlines) of a
    deployment whose status and promotions stay as stored; the batch window
    when, besides, it carries a follow-up evaluation (Nomad batches those
    per job too); else 0, written at once."""
    d = decision
    if (d.update is None or not d.update.counts_only or d.revert is not None
            or d.mark_stable is not None or d.alloc_health is not None
            or d.follow_up is not None or d.reschedule is not None):
        return 0.0
    if d.evaluation is None:
        return config.progress_window
    return config.window if d.evaluation_follows_up else 0.0


def _follows_up(d: Decision) -> bool:
    """No evaluation, or one that only follows progress up."""
    return d.evaluation is None or d.evaluation_follows_up


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
