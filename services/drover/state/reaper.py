"""Deleting many objects without an unbounded txn: purge, and the GC's writes.

etcd caps a txn at 128 operations *and* 128 compares, so every delete here
goes out in pages of at most :data:`PAGE` objects, each object compared on
the ``mod_revision`` it had when it was chosen (a changed object is never
deleted on a stale judgement: the page fails as a Conflict and the caller
re-plans from a fresh cache), plus at most a few compares of the caller's
(the job for a purge) and the leader fence. No call holds etcd for long;
a big purge is many short txns, as eval delete is many short calls.

A purge walks the job's children first and deletes the job itself in the
last txn, compared on the revision the purge started from: if the call dies
half way, the job is still there and purging it again finishes the work,
and if the job was re-registered meanwhile the last txn fails and the purge
re-plans (the new version's objects are the job's too).

Order: deployments first (their watchers stop on the delete event, so none
acts for a job being removed), then allocations, evaluations, versions.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from drover.coord.fence import Fence
from drover.errors import Conflict, NotFound
from drover.state import codec
from drover.state.service_base import Base
from drover.state.store import Compare, Delete
from drover.state.tables import Tables

#: Objects per delete txn: under etcd's 128 compares with room for the
#: caller's own compares (job, fence).
PAGE = 120
#: Re-plans after a conflict before the purge gives up (CONFLICT: retry).
REPLANS = 5

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


def job_owned(tables: Tables, ns: str, job_id: str) -> list[Doomed]:
    """Every object the job owns, in purge order (pure: reads the cache's tables)."""
    out: list[Doomed] = []
    for kind in JOB_OWNED:
        table = tables[kind]
        bucket = (table.candidates("job", f"{ns}/{job_id}") if kind == codec.JOB_VERSIONS
                  else table.candidates("job_id", job_id))
        for order in bucket.iterate(None, False):
            nsid = str(order[1])
            if not nsid.startswith(ns + "/"):
                continue  # the same job id in another namespace
            e = table.objects.get(nsid)
            if e is not None:
                out.append(Doomed(kind, nsid, e[1]))
    return out


def pages(doomed: Sequence[Doomed], size: int = PAGE) -> Iterator[Sequence[Doomed]]:
    for i in range(0, len(doomed), size):
        yield doomed[i:i + size]


class Reaper(Base):
    """The delete txns of purge and GC (a mixin of the state servicer)."""

    def _object_key(self, d: Doomed) -> bytes:
        ns, oid = d.nsid.split("/", 1)
        return self.keys.key(d.kind, ns, oid)

    async def delete_page(self, page: Sequence[Doomed], tally: Tally, *,
                          extra: Sequence[Compare] = (), also: Sequence[bytes] = (),
                          fence: Fence | None = None) -> int:
        """One txn: delete ``page`` (each compared) and the ``also`` keys."""
        keys = [self._object_key(d) for d in page]
        compares = [*extra, *(Compare(k, "mod", d.mod) for k, d in zip(keys, page, strict=True))]
        ops = [Delete(k) for k in (*keys, *also)]
        rev = await self.writer.commit(compares, ops, fence)
        tally.add(page, len(ops) + 1)  # as etcd sees it: + the writer's revision marker
        return rev

    async def purge_job(
        self, ns: str, job_id: str, fence: Fence | None = None
    ) -> tuple[Tally, int]:
        """Remove the job and all it owns (module doc); the tally and last revision."""
        tally = Tally()
        for attempt in range(REPLANS):
            await self.cache.sync()
            e = self.cache.tables[codec.JOBS].objects.get(f"{ns}/{job_id}")
            if e is None:
                if attempt == 0:
                    raise NotFound(f"job {job_id!r} not found in namespace {ns!r}")
                return tally, self.cache.revision  # someone else finished it
            job_key = self.keys.key(codec.JOBS, ns, job_id)
            doomed = job_owned(self.cache.tables, ns, job_id)
            chunks = list(pages(doomed)) or [[]]
            try:
                for chunk in chunks[:-1]:
                    await self.delete_page(chunk, tally, fence=fence)
                rev = await self.delete_page(chunks[-1], tally, fence=fence,
                                             extra=[Compare(job_key, "mod", e[1])],
                                             also=[job_key])
            except Conflict:
                continue  # something moved (a worker, a re-register): re-plan
            tally.removed[codec.JOBS] = tally.count(codec.JOBS) + 1
            return tally, rev
        raise Conflict(f"job {job_id!r} kept changing during the purge; what was removed "
                       "stays removed, purge again to finish")
