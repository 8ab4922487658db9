"""The state service's domain metrics, read at scrape time.

* ``drover.state.cache.applied_revision``: the etcd revision the watch-fed
  cache has applied.
* ``drover.state.cache.lag``: revisions between the newest etcd revision
  this replica has seen in any response (its reads and txns) and the one its
  cache applied; a consistent read waits this gap out.
* ``drover.state.etcd.contact_age``: seconds since etcd last answered.
* ``drover.state.cache.own_writes`` (counter, ``applied_by``): this
  replica's committed txns by who applied them to its cache: ``writer``
  (at once, read-your-write with no watch round trip), ``watch`` (the
  watch delivered the txn before its answer reached the writer: the usual
  case on a loaded replica) or ``waited`` (the cache was behind other
  revisions: the write waited for the watch).
* ``drover.state.etcd.txn.duration`` (histogram) and
  ``drover.state.etcd.txn.compare_failures`` (counter) are recorded by the
  etcd store itself, per transaction.
"""

from __future__ import annotations

from collections.abc import Callable

from drover.state.cache import Cache
from drover.telemetry.observed import observe


def register(cache: Cache) -> list[Callable[[], None]]:
    store = cache.store
    return [
        observe("drover.state.cache.applied_revision", lambda: [(cache.revision, {})],
                unit="1", description="the etcd revision the state cache has applied"),
        observe("drover.state.cache.lag",
                lambda: [(max(0, store.seen_revision - cache.revision), {})],
                unit="{revision}",
                description="etcd revisions seen but not yet applied by the cache"),
        observe("drover.state.etcd.contact_age", lambda: [(store.age(), {})], unit="s",
                description="seconds since etcd last answered this replica"),
        observe("drover.state.cache.own_writes",
                lambda: [(n, {"applied_by": by}) for by, n in cache.own_writes.items()],
                kind="counter", unit="{txn}",
                description="this replica's committed txns by who applied them to its cache"),
    ]
