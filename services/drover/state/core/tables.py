"""The in-memory tables of one replica's cache (pure: no asyncio, no etcd).

A :class:`Table` holds one kind's objects as entries
(:mod:`drover.state.core.entries`: the serialized proto plus its record) in
a :class:`drover.paging.IndexedCollection` (create order, one secondary
index per indexed field, sorted ids for prefixes) that holds only
references to the same keys; :class:`Tables` holds every kind's table and
applies etcd's puts and deletes to them in revision order.

A table's ``index`` is the revision of the last change (put or delete) to
any of its objects: the index of list answers and of blocking queries.

Decode once: a write tells the tables each object it puts as it plans it,
before its txn goes out (:meth:`Tables.expect_put`): the record is read from
the message being encoded and the key's parse is remembered, so the put's
event -- applied by the writer or, usually first, by the watch -- parses
neither. Exact: a record is a function of the value's bytes (no record
field is one the encoding leaves out; a unit test holds the two equal for
every kind) and is used only for an event of the very bytes it was read
for. Bounded (:data:`EXPECTED_MAX`); a dropped one only costs the parse.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from typing import Any

from drover.paging import IndexedCollection, Key, Where
from drover.paging.bulk import BulkLoad
from drover.state.core import codec
from drover.state.core.entries import (
    INDEXED,
    RECORD_MAKERS,
    SPARSE,
    Entry,
    decoder,
    record_getters,
    reserves,
)
from drover.state.core.node_rooms import NodeRooms

#: Object keys whose parse :class:`Tables` remembers (~1 MB at most).
PARSED_KEYS = 4096
#: Planned puts whose record :class:`Tables` keeps until applied (a few txns).
EXPECTED_MAX = 4096
_mod_revision = operator.itemgetter(1)
_tuple = tuple.__new__


class _Bucket:
    """The keys of one index value, walked in create order either way."""

    def __init__(self, rows: IndexedCollection[Entry], field: str | None, value: Any) -> None:
        self._rows, self._field, self._value = rows, field, value

    def iterate(self, after: Key | None, descending: bool) -> Iterator[Key]:
        return self._rows.keys(self._field, self._value, after=after, descending=descending)

    def __len__(self) -> int:
        if self._field is None:
            return len(self._rows)
        n = self._rows.count({self._field: frozenset((self._value,))})
        # None: a value the index does not hold (a sparse field's ""): walk.
        return sum(1 for _ in self.iterate(None, False)) if n is None else n


class Table:
    """One kind's objects, keyed ``"<namespace>/<id>"``; ``rows`` is the paging Source."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.index = 0
        self._message = codec.MESSAGES[kind]
        self._record = RECORD_MAKERS[kind]
        self._decode = decoder(kind)
        self.rows: IndexedCollection[Entry] = IndexedCollection(
            key_of=operator.itemgetter(2), fields=record_getters(kind),
            indexed=INDEXED[kind], id_index=True, id_prefixes=self._id_prefixes,
            defer_discards=True,  # the cache drains them in idle loop turns
            sparse=SPARSE.get(kind, ()),
        )

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def objects(self) -> Mapping[str, Entry]:
        """Entries by ``"<namespace>/<id>"``."""
        return self.rows.items

    def decode(self, nsid: str) -> Any | None:
        e = self.rows.by_id(nsid)
        return None if e is None else self._decode(e)

    def mod(self, nsid: str) -> int:
        """The object's mod revision, 0 when absent (no decode)."""
        e = self.rows.by_id(nsid)
        return 0 if e is None else int(e[1])

    def decode_entry(self, e: Entry) -> Any:
        return self._decode(e)

    def _entry(self, value: bytes, mod: int, key: Key) -> Entry:
        # Once per object listed or written (a million times in a list).
        msg = self._message()
        msg.ParseFromString(value)
        return (value, mod, key, *self._record(msg))

    def put(self, nsid: str, value: bytes, create: int, mod: int,
            record: tuple[Any, ...] | None = None) -> Entry | None:
        """Put an object; ``record``: its record, when known (no parse then)."""
        old = self.rows.by_id(nsid)
        if old is not None and old[1] >= mod:
            return old  # already applied (a replayed event)
        key = old[2] if old is not None else Key(create, nsid)
        self.rows.upsert(self._entry(value, mod, key) if record is None
                         else (value, mod, key, *record))
        if mod > self.index:
            self.index = mod
        return old

    def entry(self, nsid: str, value: bytes, create: int, mod: int) -> Entry:
        """A new entry (decodes ``value`` once, for its record)."""
        return self._entry(value, mod, Key(create, nsid))

    def load(self, entries: list[Entry]) -> None:
        """Replace the contents (an initial list): one sort per index."""
        bulk = self.rows.bulk()
        bulk.add(entries)
        self.load_bulk(bulk, max(map(_mod_revision, entries), default=0))

    def load_bulk(self, bulk: BulkLoad[Entry], top: int) -> None:
        """Replace the contents by ``bulk``'s entries, whose largest
        mod_revision is ``top``."""
        self.rows.load_bulk(bulk)
        self.index = max(self.index, top)

    def delete(self, nsid: str, rev: int) -> Entry | None:
        self.index = max(self.index, rev)
        return self.rows.remove_id(nsid)

    def candidates(self, field: str | None, value: Any) -> _Bucket:
        """The keys for ``field == value`` (all objects if no field)."""
        return _Bucket(self.rows, field, value)

    def namespaces(self) -> list[str]:
        return [str(ns) for ns in self.rows.index_values("namespace")]

    def _id_prefixes(self, prefix: str, where: Where) -> Iterable[str]:
        if self.kind in (codec.NODES, codec.SCHEDULER_CONFIG, codec.NODE_USAGE):
            return (f"{codec.GLOBAL_NS}/{prefix}",)
        spaces: Iterable[Hashable] = where.get("namespace") or self.namespaces()
        return [f"{ns}/{prefix}" for ns in spaces]


def marker_key(keys: codec.KeyCodec) -> bytes:
    """The revision marker every object write puts (see :mod:`drover.state.cache`)."""
    return f"{keys.base}state/revision".encode()


class Tables:
    """Every kind's table, fed by etcd puts and deletes in revision order.

    ``marker_revision`` is the mod_revision of the revision marker as these
    tables last saw it: every object write puts the marker, so while etcd's
    marker still has this mod_revision, no object changed since the tables
    did (DeleteEvaluations compares on it instead of on every key)."""

    def __init__(self, keys: codec.KeyCodec) -> None:
        self.keys = keys
        self.tables = {kind: Table(kind) for kind in codec.MESSAGES}
        self.revision = 0
        self.marker_revision = 0
        self._marker = marker_key(keys)
        # Recently parsed object keys (see _parse).
        self._parsed: dict[bytes, codec.ObjectKey] = {}
        # Planned puts by key: (value, record) (see expect_put).
        self._expected: dict[bytes, tuple[bytes, tuple[Any, ...]]] = {}
        # The initial list's entries per kind, and each kind's largest mod_revision.
        self._staged: dict[str, tuple[BulkLoad[Entry], list[int]]] = {}
        #: The nodes whose liveness key exists (a lease keeps it), as of
        #: ``revision``: what the reaper diffs with the ready nodes, without
        #: reading every liveness key from etcd each time.
        self.live: set[str] = set()
        self._live_prefix = keys.prefix(codec.LIVENESS, codec.GLOBAL_NS)
        #: What each node's live allocations reserve, as of ``revision``.
        self.rooms = NodeRooms()

    def _live_node(self, key: bytes) -> str | None:
        """The node a liveness key of this keyspace names, else None."""
        if key.startswith(self._live_prefix):
            return key[len(self._live_prefix):].decode()
        return None

    def _track_live(self, key: bytes, deleted: bool) -> None:
        """Note a liveness key's put or delete (``key`` is not an object)."""
        node_id = self._live_node(key)
        if node_id is None:
            return
        if deleted:
            self.live.discard(node_id)
        else:
            self.live.add(node_id)

    def __getitem__(self, kind: str) -> Table:
        return self.tables[kind]

    def _parse(self, key: bytes) -> codec.ObjectKey | None:
        """:meth:`codec.KeyCodec.parse`, remembered for the last
        ``PARSED_KEYS`` object keys: a written object's key is parsed again
        soon (a txn's key when the write is applied, after the check of what
        it replaces; an evaluation's when the broker acks it, a moment
        after its creation). Cleared when full (a bound, not an LRU)."""
        ok = self._parsed.get(key)
        if ok is None:
            ok = self.keys.parse(key)
            if ok is not None:
                self._remember_parse(key, ok)
        return ok

    def _remember_parse(self, key: bytes, ok: codec.ObjectKey) -> None:
        parsed = self._parsed
        if len(parsed) >= PARSED_KEYS:
            parsed.clear()  # a bound, not an LRU (see _parse)
        parsed[key] = ok

    def expect_put(self, key: bytes, value: bytes, kind: str, ns: str, oid: str,
                   msg: Any) -> None:
        """A write is about to put ``msg`` (encoded: ``value``) at ``key``,
        which is ``keys.key(kind, ns, oid)`` in these tables' key layout (a
        plan builds it so), the object of a listed kind (module doc)."""
        if "/" in ns:
            return  # never (validated names), but then parse would split elsewhere
        expected = self._expected
        if len(expected) >= EXPECTED_MAX:
            expected.clear()  # a bound: left by plans not committed, or events not seen
        expected[key] = (value, RECORD_MAKERS[kind](msg))
        if key not in self._parsed:
            self._remember_parse(key, _tuple(codec.ObjectKey, (kind, ns, oid)))

    def apply(self, key: bytes, value: bytes, create: int, mod: int, deleted: bool) -> (
        tuple[codec.ObjectKey, Entry | None] | None
    ):
        """Apply one change; the object it touched and its previous entry."""
        if mod > self.revision:
            self.revision = mod
        ok = self._parse(key)
        if ok is None:
            if key == self._marker:
                self.marker_revision = 0 if deleted else max(self.marker_revision, mod)
            else:
                self._track_live(key, deleted)
            return None
        table = self.tables[ok.kind]
        nsid = f"{ok.namespace}/{ok.id}"
        if deleted:
            if ok.kind == codec.ALLOCATIONS:
                self.rooms.drop(nsid)
            return ok, table.delete(nsid, mod)
        record = None
        if self._expected:
            hint = self._expected.get(key)
            if hint is not None and hint[0] == value:
                del self._expected[key]
                record = hint[1]
        old = table.put(nsid, value, create, mod, record)
        if ok.kind == codec.ALLOCATIONS:
            new = table.rows.by_id(nsid)
            if new is not old and new is not None:
                self.rooms.put(nsid, *reserves(new))
        return ok, old

    def existing(self, key: bytes) -> int | None:
        """The create revision of the object at ``key``, if cached; for a key
        that is not an object, 0 if it is the marker as seen or a liveness key
        held, else None."""
        ok = self._parse(key)
        if ok is None:
            if key == self._marker:
                return 0 if self.marker_revision else None
            return 0 if self._live_node(key) in self.live else None
        e = self.tables[ok.kind].rows.by_id(f"{ok.namespace}/{ok.id}")
        return None if e is None else int(e[2][0])

    def stage(self, kvs: Iterable[Any]) -> None:
        """Decode one page of an initial range read (``KV``-like items) into
        entries (the cache does this while the next page is in flight).

        A page is in key order, so its keys come in runs of one kind: while
        a key starts with the run's ``<base><kind>/`` its ``namespace/id`` is
        the rest (what :meth:`codec.KeyCodec.parse` would give), and only the
        first key of a run, or one not an object, takes the full parse."""
        tables, parse = self.tables, self.keys.parse
        base = self.keys.base
        prefix, cut = b"\0", 0  # (no key starts with NUL: the base does not)
        runs: dict[str, list[Entry]] = {}
        rows: list[Entry] = []
        make: Callable[[bytes, int, Key], Entry] | None = None
        top = self.revision
        new_key = tuple.__new__
        for kv in kvs:
            key, mod = kv.key, kv.mod_revision
            if mod > top:
                top = mod
            nsid = key[cut:].decode() if key.startswith(prefix) else ""
            if "/" not in nsid:
                ok = parse(key)
                if ok is None:
                    if key == self._marker:
                        self.marker_revision = mod
                    else:
                        self._track_live(key, False)
                    continue
                prefix = f"{base}{ok.kind}/".encode()
                cut = len(prefix)
                nsid = f"{ok.namespace}/{ok.id}"
                make = tables[ok.kind]._entry
                rows = runs.setdefault(ok.kind, [])
            assert make is not None
            rows.append(make(kv.value, mod, new_key(Key, (kv.create_revision, nsid))))
        self.revision = top
        # The per-entry work of the final build, done here, per page, while
        # the next page is in flight (see BulkLoad).
        for kind, entries in runs.items():
            staged = self._staged.get(kind)
            if staged is None:
                staged = self._staged[kind] = (tables[kind].rows.bulk(), [0])
            staged[0].add(entries)
            staged[1][0] = max(staged[1][0], max(map(_mod_revision, entries)))

    def load_staged(self) -> None:
        """Build every table from what :meth:`stage` collected (one sort per index)."""
        staged, self._staged = self._staged, {}
        for kind, (bulk, top) in staged.items():
            self.tables[kind].load_bulk(bulk, top[0])
        self.rooms.clear()
        for nsid, entry in self.tables[codec.ALLOCATIONS].objects.items():
            self.rooms.put(nsid, *reserves(entry))

    def advance(self, revision: int) -> None:
        self.revision = max(self.revision, revision)

    def flush(self, limit: int) -> int:
        """Apply up to ``limit`` queued secondary-index removals of every
        table (see :class:`drover.paging.IndexedCollection`); how many remain."""
        left = 0
        for table in self.tables.values():
            if table.rows.queued:
                left += table.rows.flush(limit)
        return left

    @property
    def queued(self) -> int:
        return sum(table.rows.queued for table in self.tables.values())
