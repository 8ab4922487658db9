"""The difference between two job specs, field by field (pure).

What ``nomad job plan`` and ``nomad job history -p`` show: each field that
was added, deleted or edited, named by its path. Task groups and tasks are
keyed by name (``task_groups[web].tasks[server].config.image``), not by
position, so reordering changes nothing. Fields that are no spec (version,
status, indexes, summary, submit time, stable) are left out; ``stop`` is
in (a stop is a spec change, as in Nomad).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format

from drover.api.types.v1 import job_pb2
from drover.jobspec.enums import lower_enums

ADDED, DELETED, EDITED = "Added", "Deleted", "Edited"

#: Job fields that are not part of its spec.
NOT_SPEC = frozenset({"version", "stable", "status", "status_description", "create_index",
                      "modify_index", "job_modify_index", "submit_time", "summary"})
#: Lists whose items have a name: keyed by it.
_NAMED = frozenset({"task_groups", "tasks"})


@dataclass(frozen=True)
class FieldDiff:
    type: str  # Added, Deleted or Edited
    path: str
    old: str = ""
    new: str = ""

    def line(self) -> str:
        """Nomad's markers: ``+`` added, ``-`` deleted, ``+/-`` edited;
        numbers and true/false bare, as the tables show them, text quoted."""
        if self.type == ADDED:
            return f"+ {self.path}: {shown(self.new)}"
        if self.type == DELETED:
            return f"- {self.path}: {shown(self.old)}"
        return f"+/- {self.path}: {shown(self.old)} => {shown(self.new)}"


_BARE = re.compile(r"-?\d+(\.\d+)?|true|false")


def shown(value: str) -> str:
    """A diffed value as a plan prints it: ``50``, ``true``, ``"web"``."""
    return value if _BARE.fullmatch(value) else f'"{value}"'


def _flat(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for k in sorted(value):
            yield from _flat(value[k], f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        key = path.rsplit(".", 1)[-1]
        for i, item in enumerate(value):
            name = item.get("name") if key in _NAMED and isinstance(item, dict) else None
            yield from _flat(item, f"{path}[{name if name is not None else i}]")
    else:
        yield path, str(value).lower() if isinstance(value, bool) else str(value)


def flatten(job: job_pb2.Job | None) -> dict[str, str]:
    """``path -> value`` of every spec field ``job`` sets (None: nothing)."""
    if job is None:
        return {}
    # Enum values as the tables and specs write them (``service``).
    data = lower_enums(job.DESCRIPTOR,
                       json_format.MessageToDict(job, preserving_proto_field_name=True))
    for name in NOT_SPEC:
        data.pop(name, None)
    return dict(_flat(data, ""))


def diff(old: job_pb2.Job | None, new: job_pb2.Job | None) -> list[FieldDiff]:
    """What changed from ``old`` to ``new``, in path order."""
    a, b = flatten(old), flatten(new)
    out = []
    for path in sorted(a.keys() | b.keys()):
        if path not in a:
            out.append(FieldDiff(ADDED, path, new=b[path]))
        elif path not in b:
            out.append(FieldDiff(DELETED, path, old=a[path]))
        elif a[path] != b[path]:
            out.append(FieldDiff(EDITED, path, a[path], b[path]))
    return out


def diff_type(old: job_pb2.Job | None, new: job_pb2.Job | None) -> str:
    """Nomad's job diff type: Added (no old), Deleted (no new), Edited or None."""
    if old is None:
        return ADDED if new is not None else "None"
    if new is None:
        return DELETED
    return EDITED if diff(old, new) else "None"
