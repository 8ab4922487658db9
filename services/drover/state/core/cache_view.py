""":class:`CacheView`: the core's :class:`~drover.state.core.view.View` on
this replica's cache tables (read only; a snapshot of nothing: it reads the
live tables, so a planner must not await while it holds one)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from drover.state.core.tables import Tables
from drover.state.core.view import Found
from drover.worker.resources import Vec


class CacheView:
    def __init__(self, tables: Tables, revision: int, fresh: bool) -> None:
        self._tables, self._revision, self._fresh = tables, revision, fresh

    @property
    def revision(self) -> int:
        return self._revision

    @property
    def fresh(self) -> bool:
        return self._fresh

    def get(self, kind: str, ns: str, oid: str) -> Found | None:
        table = self._tables[kind]
        e = table.objects.get(f"{ns}/{oid}")
        if e is None:
            return None
        return Found(table.decode_entry(e), e[1], e[2][0])

    def mod(self, kind: str, ns: str, oid: str) -> int:
        # The tables' dict itself (no Tables.__getitem__ call): planners
        # ask this once per object they write.
        e = self._tables.tables[kind].objects.get(f"{ns}/{oid}")
        return 0 if e is None else int(e[1])

    def ids(self, kind: str, field: str | None, value: Any) -> Iterator[str]:
        for order in self._tables[kind].candidates(field, value).iterate(None, False):
            yield str(order[1])

    def namespaces(self, kind: str) -> list[str]:
        return self._tables[kind].namespaces()

    def node_live(self, node_id: str) -> tuple[Vec, Mapping[str, Vec]]:
        rooms = self._tables.rooms
        return rooms.total(node_id), rooms.live(node_id)
