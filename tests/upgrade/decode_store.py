"""Decode every stored object with the drover this interpreter imports.

Run by the rolling-upgrade test with each version's interpreter (the old
release's venv, then this tree's): stdin is a JSON list of ``[key, value]``
pairs (base64) as etcd holds them under ``<root>/v1/``; stdout is a JSON
report: objects decoded per kind, every object that does not decode or lacks
its id (``problems``), and every object carrying fields this version does not
know (``unknown``: written by a newer version; an upgrade must see none, a
rollback may). Only the object kinds this version stores are judged (its
``drover.state.core.codec.MESSAGES``); election, membership and liveness keys
are counted as ``other``.
"""

from __future__ import annotations

import base64
import json
import sys
from typing import Any

#: The field every stored object with one must have set.
ID = "id"


def judge(pairs: list[list[str]]) -> dict[str, Any]:
    from drover.state.core.codec import MESSAGES

    counts: dict[str, int] = {}
    problems: list[str] = []
    unknown: list[str] = []
    for key_b64, value_b64 in pairs:
        key = base64.b64decode(key_b64).decode()
        value = base64.b64decode(value_b64)
        parts = key.split("/v1/", 1)[-1].split("/")
        kind = parts[0]
        message_type = MESSAGES.get(kind)
        if message_type is None:
            counts["other"] = counts.get("other", 0) + 1
            continue
        try:
            msg = message_type.FromString(value)
        except Exception as e:  # any decode failure is the finding
            problems.append(f"{key}: does not decode: {e}")
            continue
        known = message_type()
        known.CopyFrom(msg)
        known.DiscardUnknownFields()
        if known.ByteSize() != msg.ByteSize():
            unknown.append(f"{key}: {msg.ByteSize() - known.ByteSize()} bytes of fields "
                           "this version does not know")
        if ID in message_type.DESCRIPTOR.fields_by_name and not getattr(msg, ID):
            problems.append(f"{key}: no id")
        counts[kind] = counts.get(kind, 0) + 1
    return {"counts": counts, "problems": problems, "unknown": unknown}


if __name__ == "__main__":
    json.dump(judge(json.load(sys.stdin)), sys.stdout)
