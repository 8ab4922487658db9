"""Deleting many objects without an unbounded txn: purge and GC pages as plans.

etcd caps a txn at 128 operations *and* 128 compares, so every delete here
goes out in pages of at most :data:`PAGE` objects, each compared on the
``mod_revision`` it had when it was chosen (a changed object is never
deleted on a stale judgement), plus at most a few compares of the caller's
(the job for a purge) and the leader fence.

- A **GC page** (:func:`plan_delete_page`) is final on a conflict
  (``retry=False``): the GC skips that page and its next pass judges the
  objects again.
- A **purge** is a run of pages, each planned on the view as it then is
  (:func:`plan_purge_page`): the job's children first, in :data:`JOB_OWNED`
  order (deployments first, so their watchers stop before anything else of
  the job goes), and the job itself in the last page, compared on the
  revision that page saw. If the call dies half way the job is still there
  and purging again finishes the work; a conflict re-plans the page on a
  fresh view (the objects of a version registered meanwhile are the job's
  too, and go with it).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from drover.errors import NotFound
from drover.state.core import codec
from drover.state.core.plan import PlanBuilder, WritePlan, no_write
from drover.state.core.view import View

#: Objects per delete txn: under etcd's 128 compares with room for the
#: caller's own compares (job, fence).
PAGE = 120

#: Purge order (module doc).
JOB_OWNED = (codec.DEPLOYMENTS, codec.ALLOCATIONS, codec.EVALUATIONS, codec.JOB_VERSIONS)


@dataclass(frozen=True)
class Doomed:
    """One object to delete: its kind, ``"<namespace>/<id>"`` and mod_revision."""

    kind: str
    nsid: str
    mod: int


@dataclass
class Tally:
    """What a run of delete txns removed, per kind, and what it cost."""

    removed: dict[str, int] = field(default_factory=dict)
    txns: int = 0
    largest_txn: int = 0

    def add(self, doomed: Sequence[Doomed], ops: int) -> None:
        for d in doomed:
            self.removed[d.kind] = self.removed.get(d.kind, 0) + 1
        self.txns += 1
        self.largest_txn = max(self.largest_txn, ops)

    def count(self, kind: str) -> int:
        return self.removed.get(kind, 0)


@dataclass(frozen=True)
class PageDone:
    """What one committed delete page did: its revision, what it removed,
    its size as etcd counts it (+ the revision marker), and whether it
    ended the walk (a purge: the job itself went, or was gone)."""

    revision: int
    doomed: tuple[Doomed, ...]
    ops: int
    last: bool


def job_owned(view: View, ns: str, job_id: str) -> list[Doomed]:
    """Every object the job owns, in purge order."""
    out: list[Doomed] = []
    for kind in JOB_OWNED:
        field_, value = ("job", f"{ns}/{job_id}") if kind == codec.JOB_VERSIONS \
            else ("job_id", job_id)
        for nsid in view.ids(kind, field_, value):
            o_ns, _, oid = nsid.partition("/")
            if o_ns != ns:
                continue  # the same job id in another namespace
            mod = view.mod(kind, o_ns, oid)
            if mod:
                out.append(Doomed(kind, nsid, mod))
    return out


def pages(doomed: Sequence[Doomed], size: int = PAGE) -> Iterator[Sequence[Doomed]]:
    for i in range(0, len(doomed), size):
        yield doomed[i:i + size]


def _delete(plan: PlanBuilder, page: Sequence[Doomed]) -> None:
    for d in page:
        ns, _, oid = d.nsid.partition("/")
        plan.delete(d.kind, ns, oid, d.mod)


def plan_delete_page(keys: codec.KeyCodec, page: Sequence[Doomed]) -> WritePlan:
    """One GC txn: ``page``, each compared; a conflict is final (module doc)."""
    plan = PlanBuilder(keys)
    _delete(plan, page)
    done = tuple(page)
    n = len(plan.ops) + 1
    return plan.build(lambda rev: PageDone(rev, done, n, False), retry=False)


def plan_purge_page(view: View, keys: codec.KeyCodec, ns: str, job_id: str,
                    started: bool) -> WritePlan:
    """The next page of a purge (module doc); NOT_FOUND when the job is not
    there at the start, done when it went meanwhile (someone finished it)."""
    job_mod = view.mod(codec.JOBS, ns, job_id)
    if not job_mod:
        if not started:
            raise NotFound(f"job {job_id!r} not found in namespace {ns!r}")
        return no_write(lambda rev: PageDone(rev, (), 0, True))
    doomed = job_owned(view, ns, job_id)
    plan = PlanBuilder(keys)
    last = len(doomed) <= PAGE
    page = doomed if last else doomed[:PAGE]
    if last:
        plan.compare_mod(codec.JOBS, ns, job_id, job_mod)
    _delete(plan, page)
    if last:
        plan.delete(codec.JOBS, ns, job_id, None)
        page = [*page, Doomed(codec.JOBS, f"{ns}/{job_id}", job_mod)]
    done = tuple(page)
    n = len(plan.ops) + 1
    return plan.build(lambda rev: PageDone(rev, done, n, last),
                      conflict=f"job {job_id!r} kept changing during the purge; what was "
                               "removed stays removed, purge again to finish")


def pack(groups: Sequence[Sequence[Doomed]], size: int = PAGE) -> Iterator[list[Doomed]]:
    """Pages of at most ``size``; a group (an evaluation with its allocations,
    a job with all it owns) stays in one page when it fits one, and when it
    does not, its last object (the owner) goes in its last page."""
    page: list[Doomed] = []
    for group in groups:
        if len(page) + len(group) > size and page:
            yield page
            page = []
        if len(group) > size:
            for i in range(0, len(group), size):
                chunk = list(group[i:i + size])
                if i + size < len(group):
                    yield chunk
                else:
                    page = chunk
            continue
        page.extend(group)
    if page:
        yield page
