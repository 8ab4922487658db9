"""A write as data: :class:`WritePlan`, built with :class:`PlanBuilder`.

Invariants of every plan:

- it is applied atomically in ONE etcd txn (plus the revision marker the
  writer adds, and the fence compare when the call carries one);
- every object it changes is compared: ``mod == <revision the planner
  read>`` for an update, ``mod == 0`` (absent) for a create, so a write
  made on a stale view fails as a conflict and is planned again, never
  applied on what it did not see;
- ``events`` lists exactly the objects the txn changes (kind, namespace,
  id, put or delete), one per op, in op order: what the cache's watch and
  every Subscribe stream will see of it;
- a plan with no ops writes nothing: the shell answers ``respond`` with
  the view's revision and makes no txn (an unchanged node, a CAS that
  does not hold, a dry run).

Decode once: a builder given an ``on_put`` (the shell's, from
:attr:`WriteContext.on_put`) tells it every object it puts, with the key,
the value and the message, at the moment the message is encoded (so a
later change to the message cannot make them disagree). The state's cache
keeps what it needs of them to apply the put's event without parsing the
key or the value back (:meth:`drover.state.core.tables.Tables.expect_put`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from google.protobuf.timestamp_pb2 import Timestamp

from drover.coord.kv import MAX_TXN_OPS, Compare, Delete, Op, Put, objects_per_txn
from drover.errors import Conflict, DroverError
from drover.state.core import codec

DEFAULT_CONFLICT = "an object changed concurrently; re-read and retry"

#: What a NamedTuple's own ``__new__`` does, minus a Python call: a plan
#: makes a Compare, a Put and an Event per object it writes.
_tuple = tuple.__new__


OnPut = Callable[[bytes, bytes, str, str, str, Any], None]
"""Told (key, value, kind, namespace, id, message) of each object a plan puts."""


class Event(NamedTuple):
    """One object a plan changes: ``put`` or ``delete`` (a NamedTuple: one
    per written object, and cheaper to make than a frozen dataclass)."""

    kind: str
    namespace: str
    id: str
    op: str  # "put" | "delete"


@dataclass(frozen=True)
class WriteContext:
    """What a planner needs beyond the view: key layout, the call's time
    (one clock reading per attempt), a source of new ids, and the size of
    the one txn a plan becomes (etcd's ``--max-txn-ops`` as this replica is
    told it: ``--state-max-txn-ops``)."""

    keys: codec.KeyCodec
    now: Timestamp
    new_id: Callable[[], str]
    max_txn_ops: int = MAX_TXN_OPS
    #: Told each object the call's plans put (module doc); None: nobody.
    on_put: OnPut | None = None

    @property
    def max_objects(self) -> int:
        """Objects one plan may write (:func:`objects_per_txn`)."""
        return objects_per_txn(self.max_txn_ops)

    @property
    def max_compares(self) -> int:
        """Compares one plan may make, the fence's included (etcd caps them
        like ops; the marker needs none)."""
        return self.max_txn_ops

    def timestamp(self) -> Timestamp:
        """A copy of ``now`` (protos are mutable; each field gets its own)."""
        ts = Timestamp()
        ts.CopyFrom(self.now)
        return ts


@dataclass(frozen=True)
class WritePlan:
    """Compares + ops + events + what to answer; see the module invariants.

    ``respond`` turns the txn's revision (or, for a plan with no ops, the
    view's) into the response. ``conflict`` is the message of the
    :class:`Conflict` raised when the txn keeps failing. ``retry`` False
    means a failed compare is final (the compares are the caller's, not the
    view's): the shell raises ``conflict_error`` at once, without re-planning.
    """

    compares: tuple[Compare, ...]
    ops: tuple[Op, ...]
    events: tuple[Event, ...]
    respond: Callable[[int], Any]
    conflict: str = DEFAULT_CONFLICT
    retry: bool = True
    final_conflict: Callable[[], DroverError] | None = None

    def __post_init__(self) -> None:
        if len(self.events) != len(self.ops):
            raise ValueError("a plan names one event per op")

    @property
    def writes(self) -> bool:
        return bool(self.ops)

    def conflict_error(self) -> DroverError:
        if self.final_conflict is not None:
            return self.final_conflict()
        return Conflict(self.conflict)


def no_write(respond: Callable[[int], Any]) -> WritePlan:
    """A plan that writes nothing and answers at the view's revision."""
    return WritePlan((), (), (), respond)


@dataclass
class PlanBuilder:
    """Collects one plan's compares, ops and events (one planner call)."""

    keys: codec.KeyCodec
    on_put: OnPut | None = None
    compares: list[Compare] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    _compared: set[tuple[bytes, str]] = field(default_factory=set)

    def compare(self, key: bytes, target: str, value: int) -> None:
        """A precondition; the same key and target is compared once."""
        if (key, target) in self._compared:
            return
        self._compared.add((key, target))
        self.compares.append(Compare(key, target, value))

    def compare_mod(self, kind: str, ns: str, oid: str, mod: int) -> None:
        self.compare(self.keys.key(kind, ns, oid), "mod", mod)

    def compare_created(self, kind: str, ns: str, oid: str, create: int) -> None:
        """The object still is the one created at ``create`` (not purged and re-made)."""
        self.compare(self.keys.key(kind, ns, oid), "create", create)

    def put(self, kind: str, ns: str, oid: str, msg: Any, mod: int | None) -> None:
        """Write ``msg``; ``mod`` is the revision read (0: absent, a create),
        None: not compared (the caller compares it some other way)."""
        key = self.keys.key(kind, ns, oid)
        if mod is not None and (key, "mod") not in self._compared:  # compare(), inlined
            self._compared.add((key, "mod"))
            self.compares.append(_tuple(Compare, (key, "mod", mod)))
        value = codec.encode(msg)
        self.ops.append(_tuple(Put, (key, value, 0)))
        self.events.append(_tuple(Event, (kind, ns, oid, "put")))
        if self.on_put is not None:
            self.on_put(key, value, kind, ns, oid, msg)

    def put_version(self, ns: str, job_id: str, version: int, job: Any, mod: int | None) -> None:
        key = self.keys.version_key(ns, job_id, version)
        if mod is not None:
            self.compare(key, "mod", mod)
        value, oid = codec.encode(job), f"{job_id}/{version:020d}"
        self.ops.append(Put(key, value))
        self.events.append(Event(codec.JOB_VERSIONS, ns, oid, "put"))
        if self.on_put is not None:
            self.on_put(key, value, codec.JOB_VERSIONS, ns, oid, job)

    def put_leased(self, key: bytes, value: bytes, lease: int, label: str) -> None:
        """Put a key that is no object (a node's liveness key), attached to
        ``lease``; uncompared (the caller compares what guards it). Its event
        is named ``label`` (no table holds it)."""
        self.ops.append(Put(key, value, lease))
        self.events.append(Event(label, codec.GLOBAL_NS, key.decode(), "put"))

    def delete(self, kind: str, ns: str, oid: str, mod: int | None) -> None:
        key = self.keys.key(kind, ns, oid)
        if mod is not None:
            self.compare(key, "mod", mod)
        self.ops.append(Delete(key))
        self.events.append(Event(kind, ns, oid, "delete"))

    def build(self, respond: Callable[[int], Any], *, conflict: str = DEFAULT_CONFLICT,
              retry: bool = True,
              final_conflict: Callable[[], DroverError] | None = None) -> WritePlan:
        return WritePlan(tuple(self.compares), tuple(self.ops), tuple(self.events), respond,
                         conflict, retry, final_conflict)
