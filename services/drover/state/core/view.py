""":class:`View`: what a planner may read of the cache (read only).

The consumer owns the seam: exactly the reads the planners make.
:class:`drover.state.core.cache_view.CacheView` implements it on the cache's
tables; tests implement it on plain dicts. ``fresh`` says whether
the view was synced with etcd for this attempt: a rule that refuses what a
stale view could wrongly show (an object not yet seen) refuses only on a
fresh view and otherwise asks the shell to re-plan (:class:`Replan`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple, NoReturn, Protocol

from drover.api.types.v1 import scheduler_pb2
from drover.errors import DroverError
from drover.state.core import codec
from drover.state.errors import Replan
from drover.worker.resources import Vec


class Found(NamedTuple):
    """A decoded object (a copy the planner may change) and its revisions."""

    obj: Any
    mod: int
    create: int


class View(Protocol):
    @property
    def revision(self) -> int:
        """The etcd revision the view reflects."""
        ...

    @property
    def fresh(self) -> bool:
        """Synced with etcd for this attempt (not merely this replica's cache)."""
        ...

    def get(self, kind: str, ns: str, oid: str) -> Found | None:
        """The object at ``kind/ns/oid`` decoded (a fresh copy), or None."""
        ...

    def mod(self, kind: str, ns: str, oid: str) -> int:
        """Its mod revision, 0 when absent (no decode)."""
        ...

    def ids(self, kind: str, field: str | None, value: Any) -> Iterator[str]:
        """``"<ns>/<id>"`` of the objects whose indexed ``field`` is ``value``
        (every object when ``field`` is None), in create order."""
        ...

    def namespaces(self, kind: str) -> list[str]:
        ...

    def node_live(self, node_id: str) -> tuple[Vec, Mapping[str, Vec]]:
        """What the node's live allocations reserve together, and each of
        them (by ``"<ns>/<id>"``): :class:`~.node_rooms.NodeRooms`."""
        ...


def refuse(view: View, error: DroverError) -> NoReturn:
    """Raise ``error`` when judged on a fresh view; on a stale one, ask the
    shell to sync and plan again (the fresh view decides)."""
    if view.fresh:
        raise error
    raise Replan(error)


def found_all(view: View, kind: str, field: str, value: Any,
              ns: str | None = None) -> Iterator[tuple[str, Found]]:
    """Every object of ``kind`` with ``field == value`` (in ``ns`` if given)."""
    for nsid in view.ids(kind, field, value):
        o_ns, _, oid = nsid.partition("/")
        if ns is not None and o_ns != ns:
            continue
        f = view.get(kind, o_ns, oid)
        if f is not None:
            yield nsid, f


def scheduler_config(view: View) -> tuple[scheduler_pb2.SchedulerConfig, int]:
    """The scheduler config and its mod revision (defaults and 0 when unset)."""
    f = view.get(codec.SCHEDULER_CONFIG, codec.GLOBAL_NS, codec.SCHEDULER_CONFIG_ID)
    if f is None:
        return scheduler_pb2.SchedulerConfig(), 0
    return f.obj, f.mod
