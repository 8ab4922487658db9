"""Which versions of a job are kept (pure): Nomad's ``JobTrackedVersions``.

A job keeps its newest ``tracked`` versions (Nomad's default 6, the state
service's ``--state-job-tracked-versions``); older version records are
deleted in the txn that writes the new one. The newest *stable* version
is kept too when it is older than that (Nomad swaps it in), so an
auto-revert or a ``job revert`` to the last known good version always
finds it.

:func:`prune` runs after every planner (like
:func:`drover.state.jobs.core.job_status.follow`): any plan that puts a new
version record gets the deletes, each compared on the record's revision.
Invariant: after a committed write, a job has at most ``tracked`` version
records, plus its newest stable one if older.
"""

from __future__ import annotations

from drover.coord.kv import Compare, Delete
from drover.state.core import codec
from drover.state.core.plan import Event, WritePlan
from drover.state.core.view import View

DEFAULT_TRACKED = 6


def doomed(versions: list[tuple[int, bool]], tracked: int) -> list[int]:
    """Of ``versions`` ((version, stable), any order), the ones to delete."""
    ordered = sorted(versions, reverse=True)
    keep = {v for v, _ in ordered[:tracked]}
    stable = next((v for v, s in ordered if s), None)
    if stable is not None:
        keep.add(stable)
    return sorted(v for v, _ in ordered if v not in keep)


def prune(view: View, plan: WritePlan, keys: codec.KeyCodec, tracked: int,
          max_objects: int) -> WritePlan:
    """``plan`` with the version records past ``tracked`` deleted (module doc).
    Deletes that do not fit in the txn wait for the job's next version."""
    new: dict[tuple[str, str], dict[int, bool]] = {}
    for i, e in enumerate(plan.events):
        if e.kind != codec.JOB_VERSIONS or e.op != "put":
            continue
        job_id, _, version = e.id.rpartition("/")
        value = plan.ops[i].value  # type: ignore[union-attr]
        stable = codec.decode(codec.JOB_VERSIONS, value, 0, 0).stable
        new.setdefault((e.namespace, job_id), {})[int(version)] = stable
    if not new:
        return plan
    compares, ops, events = list(plan.compares), list(plan.ops), list(plan.events)
    for (ns, job_id), planned in new.items():
        stored: dict[int, tuple[bool, int]] = {}
        for nsid in view.ids(codec.JOB_VERSIONS, "job", f"{ns}/{job_id}"):
            v_ns, _, vid = nsid.partition("/")
            found = view.get(codec.JOB_VERSIONS, v_ns, vid)
            if found is not None:
                stored[int(found.obj.version)] = (bool(found.obj.stable), found.mod)
        versions = {v: s for v, (s, _) in stored.items()} | planned
        for v in doomed(list(versions.items()), tracked):
            if v in planned or v not in stored or len(ops) >= max_objects:
                continue
            key = keys.version_key(ns, job_id, v)
            if not any(c.key == key and c.target == "mod" for c in compares):
                compares.append(Compare(key, "mod", stored[v][1]))
            ops.append(Delete(key))
            events.append(Event(codec.JOB_VERSIONS, ns, f"{job_id}/{v:020d}", "delete"))
    if len(ops) == len(plan.ops):
        return plan
    return WritePlan(tuple(compares), tuple(ops), tuple(events), plan.respond,
                     plan.conflict, plan.retry, plan.final_conflict)
