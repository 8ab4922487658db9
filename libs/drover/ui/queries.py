"""The list filters the pages send (pure): CEL built from a form's fields.

Every list is paged on the server (``page_size``, ``page_token``); a page's
filter is built here from what the user typed, with user text always a
quoted string literal, never spliced in as CEL.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

#: Statuses a job filter may name (Nomad's UI offers these three).
JOB_STATUSES = ("pending", "running", "dead")
EVAL_STATUSES = ("blocked", "pending", "complete", "failed", "canceled")
NODE_STATUSES = ("initializing", "ready", "down", "disconnected")


def literal(text: str) -> str:
    """``text`` as a CEL string literal (JSON's escaping is CEL's)."""
    return json.dumps(text)


def _all(*terms: str) -> str:
    return " && ".join(t for t in terms if t)


def job_filter(name: str = "", status: str = "") -> str:
    """Jobs whose id contains ``name`` and whose status is ``status``;
    an unknown status is ignored (the form offers only the known ones)."""
    return _all(f"id.contains({literal(name)})" if name else "",
                f"status == {literal(status)}" if status in JOB_STATUSES else "")


def eval_filter(status: str = "", job: str = "") -> str:
    return _all(f"status == {literal(status)}" if status in EVAL_STATUSES else "",
                f"job_id.startsWith({literal(job)})" if job else "")


def node_filter(status: str = "") -> str:
    return f"status == {literal(status)}" if status in NODE_STATUSES else ""


def job_allocs(job_id: str) -> str:
    return f"job_id == {literal(job_id)}"


def node_allocs(node_id: str) -> str:
    """The allocations a node still runs (what a drain has left to move)."""
    return f'node_id == {literal(node_id)} && desired_status == "run"'


def job_deployments(job_id: str) -> str:
    return f"job_id == {literal(job_id)}"


def blocked() -> str:
    return 'state == "blocked"'


def form(params: Mapping[str, str], *names: str) -> dict[str, str]:
    """The named fields of a query string, stripped (missing: empty)."""
    return {n: (params.get(n) or "").strip() for n in names}
