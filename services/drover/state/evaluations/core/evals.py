"""Evaluation planners: upsert, update (broker outcomes), delete by ids.

- **Upsert** creates evaluations, or (leader only: the shell requires the
  fence) writes an outcome. Existence is judged on the view and every
  evaluation is compared on it, so a concurrent create turns an unfenced
  "create" into a conflict, then (re-planned) into a refusal, never an
  update. An existing evaluation keeps its ``create_time``. An unfenced
  re-create of an evaluation stored exactly so (a retried create,
  :mod:`drover.state.core.recreate`) is skipped: OK whatever its status
  (a terminal one included), and when every one is, nothing is written.
- **Update**: updates that never create, creates that never update. Each
  update is compared on the ``modify_index`` the writer held (so a late
  Ack never re-creates a deleted evaluation, nor overwrites a changed
  one); each create is compared absent. The compares are the caller's;
  the view is used only to name the refusal (:func:`update_of_seen`,
  :func:`create_is_new`): EVALUATION_GONE / _CHANGED / _EXISTS with
  ``eval_id`` in the ErrorInfo. All or nothing, one txn.
- **Delete by ids**: all the named evaluations or none (NOT_FOUND lists
  the missing), each compared on its revision, and the broker must be
  paused (the scheduler config compared too). A dry run counts, writes
  nothing and needs no pause.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import attrgetter

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import evaluation_pb2
from drover.errors import NotFound
from drover.state.core import codec
from drover.state.core.plan import PlanBuilder, WriteContext, WritePlan, no_write
from drover.state.core.recreate import identical_existing
from drover.state.core.rules import OUTCOMES, broker_paused, create_is_new, update_of_seen
from drover.state.core.validate import ALL_NAMESPACES
from drover.state.core.view import View
from drover.state.evaluations.core.unblock import admit_blocked

Evals = Sequence[evaluation_pb2.Evaluation]

_NS_ID = attrgetter("namespace", "id")


def plan_upsert(view: View, ctx: WriteContext, evs: Evals,
                existing_needs_fence: Callable[[], None] | None,
                terminal_needs_fence: Callable[[], None] | None = None) -> WritePlan:
    """UpsertEvaluations. ``existing_needs_fence`` (an unfenced call) raises
    when any evaluation exists already: changing one is a broker outcome;
    ``terminal_needs_fence`` (an unfenced call) when one with a terminal
    status is not the identical re-create of a stored one: writing an
    outcome is the broker's too. An identical re-create is OK whatever its
    status, so both are judged after it."""
    kind, now = codec.EVALUATIONS, ctx.now
    # One look-up per evaluation (its revision on the view, 0: absent); the
    # old value is decoded only for one that exists, for its create_time.
    idents = [_NS_ID(e) for e in evs]
    mods = [view.mod(kind, ns, eid) for ns, eid in idents]
    skip = [False] * len(evs)
    if existing_needs_fence is not None and any(mods):
        # unfenced: an existing one may only be the same create again
        skip = [bool(mod) and identical_existing(view, kind, ns, eid, ev)
                for ev, (ns, eid), mod in zip(evs, idents, mods, strict=True)]
    if terminal_needs_fence is not None and any(
            ev.status in OUTCOMES and not same for ev, same in zip(evs, skip, strict=True)):
        terminal_needs_fence()
    if existing_needs_fence is not None and any(
            mod and not same for mod, same in zip(mods, skip, strict=True)):
        existing_needs_fence()
    ids = [eid for _, eid in idents]
    if all(skip):
        return no_write(lambda rev: state_pb2.UpsertEvaluationsResponse(eval_ids=ids, index=rev))
    plan = PlanBuilder(ctx.keys, ctx.on_put)
    for ev, (ns, eid), mod, same in zip(evs, idents, mods, skip, strict=True):
        if same:  # still there, unchanged, when the others are written
            plan.compare_mod(kind, ns, eid, mod)
            continue
        # the call's own copies: set idempotently on each attempt
        old = view.get(kind, ns, eid) if mod else None
        if old is not None:
            ev.create_time.CopyFrom(old.obj.create_time)
        elif not ev.HasField("create_time"):
            ev.create_time.CopyFrom(now)
        ev.modify_time.CopyFrom(now)
        if old is None:
            admit_blocked(view, ev)
        plan.put(kind, ns, eid, ev, old.mod if old else 0)
    return plan.build(lambda rev: state_pb2.UpsertEvaluationsResponse(eval_ids=ids, index=rev))


def plan_update(view: View, ctx: WriteContext, updates: Evals, creates: Evals) -> WritePlan:
    """UpdateEvaluations (module doc)."""
    if view.fresh:  # the rules judge on a fresh view only (they return at once else)
        for ev in updates:
            update_of_seen(view, ev)
        for ev in creates:
            create_is_new(view, ev)
    kind, now = codec.EVALUATIONS, ctx.now
    plan = PlanBuilder(ctx.keys, ctx.on_put)
    # The call's own copies (validate): set idempotently on each attempt.
    for ev in updates:
        ev.modify_time.CopyFrom(now)
        ns, eid = _NS_ID(ev)
        plan.put(kind, ns, eid, ev, ev.modify_index)
    for ev in creates:
        if not ev.HasField("create_time"):
            ev.create_time.CopyFrom(now)
        ev.modify_time.CopyFrom(now)
        admit_blocked(view, ev)  # a missed unblock: stored pending at once
        ns, eid = _NS_ID(ev)
        plan.put(kind, ns, eid, ev, 0)
    return plan.build(lambda rev: state_pb2.UpdateEvaluationsResponse(index=rev))


def find_eval(view: View, ns: str, eval_id: str) -> tuple[str, int] | None:
    """(namespace, mod revision) of an evaluation by id; ``ns`` "" or "*"
    looks in every namespace."""
    spaces = [ns] if ns not in ("", ALL_NAMESPACES) else view.namespaces(codec.EVALUATIONS)
    for space in spaces:
        mod = view.mod(codec.EVALUATIONS, space, eval_id)
        if mod:
            return space, mod
    return None


def plan_delete_ids(view: View, ctx: WriteContext, ns: str, ids: Sequence[str],
                    dry_run: bool) -> WritePlan:
    """DeleteEvaluations by ids (module doc)."""
    plan = PlanBuilder(ctx.keys, ctx.on_put)
    if not dry_run:
        plan.compare_mod(codec.SCHEDULER_CONFIG, codec.GLOBAL_NS, codec.SCHEDULER_CONFIG_ID,
                         broker_paused(view))
    missing = []
    for eid in ids:
        found = find_eval(view, ns, eid)
        if found is None:
            missing.append(eid)
            continue
        plan.delete(codec.EVALUATIONS, found[0], eid, found[1])
    if missing:
        raise NotFound(f"evaluation(s) not found: {', '.join(missing)}; nothing deleted",
                       metadata={"ids": ",".join(missing[:20])})
    n = len(plan.ops)
    if dry_run:
        return no_write(lambda rev: state_pb2.DeleteEvaluationsResponse(deleted=n, index=rev))
    return plan.build(lambda rev: state_pb2.DeleteEvaluationsResponse(deleted=n, index=rev))
