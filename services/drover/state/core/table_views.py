"""What a read of the cache tables sees of them (the consumer's seam): the
read hooks of :mod:`.query_specs` and the job snapshot (:mod:`.job_snapshot`)
read through these, and :mod:`.tables` provides them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol


class KeyView(Protocol):
    @property
    def create_index(self) -> int: ...

    @property
    def id(self) -> str: ...


class BucketView(Protocol):
    def iterate(self, after: Any, descending: bool) -> Iterator[KeyView]: ...


class TableView(Protocol):
    """What the hooks read of one kind's cache table."""

    def decode(self, nsid: str) -> Any | None: ...

    def mod(self, nsid: str) -> int: ...

    def candidates(self, field: str | None, value: Any) -> BucketView: ...

    def namespaces(self) -> list[str]: ...


class TablesView(Protocol):
    def __getitem__(self, kind: str) -> TableView: ...
