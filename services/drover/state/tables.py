"""The in-memory tables of one replica's cache (pure: no asyncio, no etcd).

Memory is the constraint (a million evaluations in well under 1 KB each), so
a table keeps, per object, only the serialized value, its mod revision and a
shared order tuple ``(create_revision, "<namespace>/<id>")``; protos are
decoded on read. The order tuple is the one sort key of every index: the
primary order (create order = ``create_index``, ties by key) and one
:class:`OrderedSet` per secondary index value (by namespace, job, status,
type, node, deployment, ...), which hold references to the same tuples, so a
secondary index costs a pointer per object, not a copy.

A table's ``index`` is the revision of the last change (put or delete) to
any of its objects: the index of list answers and of blocking queries.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from sortedcontainers import SortedList

from drover.state import codec
from drover.state.activation import enum_short

Order = tuple[int, str]
# (value, mod_revision, order)
Entry = tuple[bytes, int, Order]
Extractor = Callable[[Any], dict[str, Any]]


class OrderedSet:
    """Order tuples kept sorted; iteration from a cursor either way."""

    __slots__ = ("_items",)

    def __init__(self, items: list[Order] | None = None) -> None:
        self._items: SortedList = SortedList(items or ())

    def __len__(self) -> int:
        return len(self._items)

    def add(self, item: Order) -> None:
        self._items.add(item)

    def discard(self, item: Order) -> None:
        self._items.discard(item)

    def iterate(self, after: Order | None, descending: bool) -> Iterator[Order]:
        """Items strictly after ``after`` in the direction of travel."""
        if after is None:
            return iter(self._items.islice(reverse=descending))
        if descending:
            return self._items.irange(maximum=after, inclusive=(True, False), reverse=True)
        return self._items.irange(minimum=after, inclusive=(False, True))


def _eval_fields(m: Any) -> dict[str, Any]:
    return {
        "namespace": m.namespace, "job_id": m.job_id, "status": enum_short(m, "status"),
        "type": m.type, "triggered_by": m.triggered_by,
        "deployment_id": m.deployment_id, "node_id": m.node_id,
    }


def _alloc_fields(m: Any) -> dict[str, Any]:
    return {
        "namespace": m.namespace, "job_id": m.job_id, "node_id": m.node_id,
        "deployment_id": m.deployment_id, "eval_id": m.eval_id,
        "client_status": enum_short(m, "client_status"),
    }


def _deployment_fields(m: Any) -> dict[str, Any]:
    return {"namespace": m.namespace, "job_id": m.job_id, "status": enum_short(m, "status")}


def _job_fields(m: Any) -> dict[str, Any]:
    return {
        "namespace": m.namespace, "status": enum_short(m, "status"),
        "type": enum_short(m, "type"),
    }


def _version_fields(m: Any) -> dict[str, Any]:
    return {"job": f"{m.namespace}/{m.id}"}


def _node_fields(m: Any) -> dict[str, Any]:
    return {"status": enum_short(m, "status"), "datacenter": m.datacenter}


EXTRACTORS: dict[str, Extractor] = {
    codec.EVALUATIONS: _eval_fields,
    codec.ALLOCATIONS: _alloc_fields,
    codec.DEPLOYMENTS: _deployment_fields,
    codec.JOBS: _job_fields,
    codec.JOB_VERSIONS: _version_fields,
    codec.NODES: _node_fields,
    codec.SCHEDULER_CONFIG: lambda m: {},
}

_EMPTY = OrderedSet()


class Table:
    """One kind's objects, keyed ``"<namespace>/<id>"``."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.index = 0
        self.objects: dict[str, Entry] = {}
        self.order = OrderedSet()
        self.secondary: dict[str, dict[Any, OrderedSet]] = {}
        self._extract = EXTRACTORS[kind]
        # Interning the repeated index values (namespace, status, type...)
        # keeps one string per distinct value rather than one per object.
        self._interned: dict[Any, Any] = {}

    def __len__(self) -> int:
        return len(self.objects)

    def decode(self, nsid: str) -> Any | None:
        e = self.objects.get(nsid)
        if e is None:
            return None
        return codec.decode(self.kind, e[0], e[2][0], e[1])

    def decode_entry(self, e: Entry) -> Any:
        return codec.decode(self.kind, e[0], e[2][0], e[1])

    def _fields(self, value: bytes) -> dict[str, Any]:
        msg = codec.MESSAGES[self.kind]()
        msg.ParseFromString(value)
        return self._extract(msg)

    def _index(self, order: Order, fields: dict[str, Any], add: bool) -> None:
        for name, value in fields.items():
            by_value = self.secondary.setdefault(name, {})
            if add:
                value = self._interned.setdefault(value, value)
                by_value.setdefault(value, OrderedSet()).add(order)
            else:
                s = by_value.get(value)
                if s is not None:
                    s.discard(order)
                    if not s:
                        del by_value[value]

    def put(self, nsid: str, value: bytes, create: int, mod: int) -> Entry | None:
        old = self.objects.get(nsid)
        if old is not None and old[1] >= mod:
            return old  # already applied (a replayed event)
        order: Order = old[2] if old is not None else (create, nsid)
        new_fields = self._fields(value)
        if old is not None:
            old_fields = self._fields(old[0])
            if old_fields != new_fields:
                self._index(order, old_fields, add=False)
                self._index(order, new_fields, add=True)
        else:
            self.order.add(order)
            self._index(order, new_fields, add=True)
        self.objects[nsid] = (value, mod, order)
        self.index = max(self.index, mod)
        return old

    def delete(self, nsid: str, rev: int) -> Entry | None:
        old = self.objects.pop(nsid, None)
        self.index = max(self.index, rev)
        if old is not None:
            self.order.discard(old[2])
            self._index(old[2], self._fields(old[0]), add=False)
        return old

    def candidates(self, field: str | None, value: Any) -> OrderedSet:
        """The ordered set for ``field == value`` (all objects if no field)."""
        if field is None:
            return self.order
        return self.secondary.get(field, {}).get(value, _EMPTY)

    def indexed_fields(self) -> frozenset[str]:
        return frozenset(self._extract(codec.MESSAGES[self.kind]()))


class Tables:
    """Every kind's table, fed by etcd puts and deletes in revision order."""

    def __init__(self, keys: codec.KeyCodec) -> None:
        self.keys = keys
        self.tables = {kind: Table(kind) for kind in codec.MESSAGES}
        self.revision = 0

    def __getitem__(self, kind: str) -> Table:
        return self.tables[kind]

    def apply(self, key: bytes, value: bytes, create: int, mod: int, deleted: bool) -> (
        tuple[codec.ObjectKey, Entry | None] | None
    ):
        """Apply one change; the object it touched and its previous entry."""
        self.revision = max(self.revision, mod)
        ok = self.keys.parse(key)
        if ok is None:
            return None
        table = self.tables[ok.kind]
        nsid = f"{ok.namespace}/{ok.id}"
        if deleted:
            return ok, table.delete(nsid, mod)
        return ok, table.put(nsid, value, create, mod)

    def advance(self, revision: int) -> None:
        self.revision = max(self.revision, revision)
