"""What a request value may be: the caps (:class:`Limits`), protobuf's own
bounds and which fields are ids, documents or counts. One home for the
rules both the full check (:mod:`.fields`) and the accept-only fast path
(:mod:`.accept`) apply."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "DEFAULT_LIMITS", "DOCUMENTS", "DURATION_MAX_SECONDS", "ID_CHARS", "ID_NAMES", "INT64_MAX",
    "NON_NEGATIVE", "TIMESTAMP_MAX_SECONDS", "TIMESTAMP_MIN_SECONDS", "Limits", "is_id_field",
    "string_cap",
]

# protobuf's own bounds (google/protobuf/duration.proto, timestamp.proto).
DURATION_MAX_SECONDS = 315_576_000_000
TIMESTAMP_MIN_SECONDS = -62_135_596_800  # 0001-01-01T00:00:00Z
TIMESTAMP_MAX_SECONDS = 253_402_300_799  # 9999-12-31T23:59:59Z
INT64_MAX = 2**63 - 1

ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")

@dataclass(frozen=True)
class Limits:
    """Caps on request values. Far below the 16 MiB message limit, and
    such that any value echoed in an error stays small."""

    max_id: int = 128
    max_string: int = 8 * 1024
    max_filter: int = 4 * 1024
    max_page_token: int = 4 * 1024
    max_document: int = 64 * 1024
    max_map_key: int = 256
    max_map_value: int = 16 * 1024
    max_bytes: int = 64 * 1024
    # Entries of one repeated or map field: the same cap for both, as a
    # plan's maps (the nodes and allocations it touches) grow with its
    # lists. A refusal names it (``max_entries``) for the client to split to.
    max_repeated: int = 1024
    max_map_entries: int = 1024
    max_depth: int = 16


DEFAULT_LIMITS = Limits()

#: Fields named like this hold object ids (and so do ``*_id``/``*_ids``).
ID_NAMES = frozenset({
    "id", "ids", "keys", "previous_eval", "next_eval", "blocked_eval",
    "previous_allocation", "placed_canaries", "replica",
})
#: Strings that hold whole documents (an ACL policy's rules).
DOCUMENTS = frozenset({"rules"})
#: int32 fields that count things: never negative.
NON_NEGATIVE = frozenset({
    "page_size", "count", "max_parallel", "canary", "desired_canaries", "desired_total",
    "placed_allocs", "healthy_allocs", "unhealthy_allocs",
})


def is_id_field(name: str) -> bool:
    return name in ID_NAMES or name.endswith(("_id", "_ids"))


def string_cap(name: str, limits: Limits) -> int:
    if name == "filter":
        return limits.max_filter
    if name == "page_token":
        return limits.max_page_token
    if name in DOCUMENTS:
        return limits.max_document
    return limits.max_string
