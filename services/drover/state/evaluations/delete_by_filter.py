"""DeleteEvaluations by filter: one page per call, deleted by several etcd
txns in flight.

A call matches one page on the cache -- at most ``--state-delete-txns-in-flight``
txns of the largest size, ``--state-max-txn-ops`` less 2 keys (room for the
per-key compares, the scheduler config's and a fence; the marker's put is
the txn's extra op), and at most the paging maximum (1,000) -- cuts it into
such txns and sends them together, so etcd works on one while this replica
applies the watched deletes of another. At etcd's default cap (128) a page
is two txns of 126 (four made each call slower than twice two: p50 25 ms
against 9.5, for no better ratio); at 1,024 it is one txn.

Guarantees, each chunk on its own (a chunk is one txn: all of it or none):

* **No stale match.** No evaluation changed since it matched is deleted on
  that match. A page that fits one txn compares the revision marker every
  object write puts (:func:`drover.state.core.tables.marker_key`) on the
  mod_revision the cache had seen when the page matched: one compare proves
  nothing changed. A page of several txns compares each key on the
  mod_revision it matched with: the txns of one call put the marker too, so
  a marker compare would make them conflict with each other (measured: the
  marker-compared txn of a 4-txn call lost to a sibling in 4 calls of 6). A
  txn whose marker compare fails retries with per-key compares; one whose
  per-key compares fail re-syncs, re-matches its evaluations on fresh data
  and retries (at most ``RETRIES`` times in all).
* **The broker stays paused.** Every chunk compares the scheduler config's
  mod_revision as the page saw it; once the broker is un-paused no further
  chunk commits, and a re-match refuses (BROKER_NOT_PAUSED).
* **``deleted`` is what was applied**: the evaluations of the chunks whose
  txns committed.
* **Paging after a partial failure.** The cursor is the last examined
  ``(create_index, key)``; pages walk strictly after it. When every chunk
  commits (or its evaluations stopped matching), the token resumes after
  the page. When a chunk could not be applied (still conflicting after its
  retries, or the broker was un-paused) but another was, the call succeeds
  with what was applied and a token that resumes just before the first
  evaluation left undeleted, so the next call re-matches it (a deleted one
  behind it is simply gone). When nothing was applied the call fails as a
  single txn would (ABORTED CONFLICT, or FAILED_PRECONDITION
  BROKER_NOT_PAUSED) and the same token may be sent again. An etcd error
  fails the call; chunks committed before it stay deleted, and the same
  token re-walks the page.

Only the first call of a walk syncs the cache with etcd; the compares make
that safe for the later ones.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from drover.api.state.v1 import state_pb2
from drover.coord.fence import Fence
from drover.coord.kv import Compare, Delete
from drover.errors import Conflict, FailedPrecondition
from drover.filter import Filter
from drover.paging import Key, PageRequest, resolve_page_size
from drover.state.cache import Cache
from drover.state.core import codec
from drover.state.core.cache_view import CacheView
from drover.state.core.entries import Entry
from drover.state.core.rules import broker_paused
from drover.state.core.tables import marker_key
from drover.state.core.validate import check_name
from drover.state.pipeline import Caller, Writer, fence_from
from drover.state.reads import Reader, list_namespace

#: Txns one chunk may try: the marker's (a page of one txn only) comes extra.
RETRIES = 3

#: Before every evaluation: the cursor of a walk's very first page.
START = Key(0, "")


# -- pure -------------------------------------------------------------------


def chunked(hits: Sequence[Entry], size: int) -> list[list[Entry]]:
    return [list(hits[i:i + size]) for i in range(0, len(hits), size)]


def resume_after(hits: Sequence[Entry], left: set[str]) -> Key | None:
    """The cursor a retry of this page starts after: the key of the hit
    before the first one ``left`` undeleted (walk order), or ``None`` when
    that is the page's first hit (resume where the page started)."""
    prev: Key | None = None
    for h in hits:
        if h[2][1] in left:
            return prev
        prev = h[2]
    raise ValueError("no hit is left")


@dataclass(frozen=True)
class ChunkResult:
    deleted: int
    revision: int
    #: Ids (``ns/id``) matched but not deleted: still conflicting, the broker
    #: was un-paused (a failed precondition), or etcd failed (``error``).
    left: tuple[str, ...] = ()
    error: Exception | None = None


# -- shell ------------------------------------------------------------------


class DeleteByFilter:
    """DeleteEvaluations by filter (:meth:`delete`): one page of matches per
    call, deleted in bounded txns."""

    def __init__(self, cache: Cache, reader: Reader, writer: Writer,
                 keys: codec.KeyCodec) -> None:
        self.cache, self.reader, self.writer, self.keys = cache, reader, writer, keys

    def delete_page_limit(self) -> int:
        """Evaluations one call matches: ``in_flight`` txns of the largest
        size the configured cap allows (the paging maximum caps it too)."""
        cfg = self.writer.config
        return cfg.delete_txns_in_flight * (cfg.max_txn_ops - 2)

    def _broker_paused(self) -> Compare:
        """The broker-paused rule on this replica's cache, as the compare
        that keeps it true inside the txn; FAILED_PRECONDITION
        (BROKER_NOT_PAUSED) unless the broker is paused."""
        mod = broker_paused(CacheView(self.cache.tables, self.cache.revision, False))
        key = self.keys.key(codec.SCHEDULER_CONFIG, codec.GLOBAL_NS, codec.SCHEDULER_CONFIG_ID)
        return Compare(key, "mod", mod)

    def _eval_keys(self, hits: Sequence[Entry]) -> list[bytes]:
        # "<base>evaluations/" + "<ns>/<id>": the cache's id is the key's tail.
        prefix = self.keys.prefix(codec.EVALUATIONS)
        return [prefix + h[2][1].encode() for h in hits]

    async def delete(self, request: Any, caller: Caller) -> Any:
        scope = {"job_id": check_name(request.job_id, "job_id")} if request.job_id else {}
        size = min(resolve_page_size(request.page_size, self.reader.paginator.defaults),
                   self.delete_page_limit())
        # dry_run is bound into the token: a preview's token must not let a
        # real delete skip the matches of the pages the preview walked.
        req = PageRequest("DeleteEvaluations", size, request.page_token, "",
                          list_namespace(request.namespace), "", scope,
                          options={"dry_run": "true" if request.dry_run else "false"})
        flt = self.reader.compile(codec.EVALUATIONS, request.filter)
        if not request.page_token:
            # The first call reads consistently, so everything present then is
            # walked; later calls trust the cache (every delete compares what
            # it matched, and the config's, so staleness costs a retry, never
            # a wrong delete) and save a round trip each.
            await self.cache.sync()
        page = self.reader.page(codec.EVALUATIONS, req, request.filter)
        # Read with the page, no await between: what the match saw.
        seen = self.cache.tables.marker_revision
        hits, token = list(page.items), page.next_page_token
        if request.dry_run or not hits:
            if not request.dry_run:
                self._broker_paused()
            return state_pb2.DeleteEvaluationsResponse(
                deleted=len(hits), next_page_token=token, index=self.cache.revision)
        paused = self._broker_paused()
        cfg = self.writer.config
        # Txns of the largest size: a page that fits one is one txn (the
        # cheapest: one marker compare); only a larger page (small txns,
        # e.g. etcd's default cap) keeps several in flight. Splitting a page
        # of 1,000 over four txns of 250 cost 20 % more CPU here, for no gain.
        size = cfg.max_txn_ops - 2
        gate = asyncio.Semaphore(cfg.delete_txns_in_flight)
        fence = fence_from(caller.metadata)
        job_of = self.cache.tables[codec.EVALUATIONS].rows.getter("job_id")

        def still(e: Entry) -> bool:
            return flt.matches(e) and (not scope or job_of(e) == scope["job_id"])

        chunks = chunked(hits, size)
        # The marker only when the page is one txn: the txns of one call put
        # the marker too, so a marker-compared one would lose to its siblings.
        marker_seen = seen if len(chunks) == 1 else 0

        async def run(chunk: list[Entry]) -> ChunkResult:
            async with gate:
                return await self._delete_chunk(chunk, marker_seen, paused, still, fence)

        results = await asyncio.gather(*(run(c) for c in chunks))
        return self._answer(results, hits, token, request.page_token, req, flt)

    def _answer(self, results: Sequence[ChunkResult], hits: list[Entry], token: str,
                asked: str, req: PageRequest, flt: Filter) -> Any:
        """The call's answer from its txns' results: what they deleted, or
        the error that stopped them all; a page left partly undeleted is
        walked again from its first left object (``asked``: the call's token)."""
        deleted = sum(r.deleted for r in results)
        index = max([r.revision for r in results if r.deleted] or [self.cache.revision])
        left = {nsid for r in results for nsid in r.left}
        errors = [r.error for r in results if r.error is not None]
        failed = [e for e in errors if not isinstance(e, Conflict | FailedPrecondition)]
        if failed:
            raise failed[0]  # etcd trouble: the same token re-walks the page
        if left and not deleted:
            # As one txn would: the un-pause first, else the last conflict.
            raise next((e for e in errors if isinstance(e, FailedPrecondition)), errors[0])
        if left:
            cursor = resume_after(hits, left)
            token = (asked if cursor is None and asked else
                     self.reader.paginator.codec.encode(
                         self.reader.paginator.binding(req, flt), cursor or START))
        return state_pb2.DeleteEvaluationsResponse(
            deleted=deleted, next_page_token=token, index=index)

    async def _delete_chunk(self, hits: list[Entry], seen: int, paused: Compare,
                            still: Callable[[Entry], bool], fence: Fence | None
                            ) -> ChunkResult:
        """Delete ``hits`` in one txn, compared on the marker (``seen`` > 0)
        or per key; on a conflict per key, then re-matched. Never raises a
        conflict or BROKER_NOT_PAUSED: they come back in the result."""
        marker = marker_key(self.keys)
        attempts = RETRIES + 1 if seen else RETRIES
        keys = self._eval_keys(hits)
        for attempt in range(attempts):
            if attempt == 0 and seen:
                compares = [paused, Compare(marker, "mod", seen)]
            else:
                compares = [paused]
                compares += [Compare(k, "mod", e[1]) for k, e in zip(keys, hits, strict=True)]
            try:
                rev = await self.writer.commit(compares, [Delete(k) for k in keys], fence)
                return ChunkResult(len(hits), rev)
            except Conflict as err:
                if attempt == attempts - 1:
                    return ChunkResult(0, 0, tuple(h[2][1] for h in hits), err)
                if attempt == 0 and seen:
                    continue  # something changed somewhere: compare per key
            except Exception as err:  # etcd trouble: the call raises it after the rest
                return ChunkResult(0, 0, tuple(h[2][1] for h in hits), err)
            # Something changed under the chunk: re-match what is there now.
            try:
                await self.cache.sync()
                paused = self._broker_paused()
            except Exception as err:  # BROKER_NOT_PAUSED (un-paused), or etcd trouble
                return ChunkResult(0, 0, tuple(h[2][1] for h in hits), err)
            table = self.cache.tables[codec.EVALUATIONS]
            hits = [e for e in (table.objects.get(h[2][1]) for h in hits)
                    if e is not None and still(e)]
            if not hits:
                return ChunkResult(0, 0)
            keys = self._eval_keys(hits)
        raise AssertionError("unreachable")


__all__ = ["DeleteByFilter", "chunked", "resume_after"]
