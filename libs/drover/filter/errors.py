"""The filter library's one error.

Every way a filter expression can be wrong -- syntax, unknown field, a field
compared with a literal of the wrong type, a non-bool result -- is
``INVALID_ARGUMENT`` with reason ``INVALID_FILTER``; ``metadata`` names the
request field (``filter``) and, where known, the offending filter ``path``
and ``line``/``column``.
"""

from __future__ import annotations

from collections.abc import Mapping

from drover.errors import InvalidArgument

__all__ = ["InvalidFilter"]


class InvalidFilter(InvalidArgument):
    reason = "INVALID_FILTER"

    def __init__(self, message: str, *, metadata: Mapping[str, str] | None = None) -> None:
        super().__init__(message, metadata={"field": "filter", **(metadata or {})})
