"""Register / compare-and-set models of drover objects.

**Jobs** (one register per job; the job modify index is its version):
the state is ``(index, tag)`` — the job's ``job_modify_index`` (0: absent)
and the tag the last write carried (a value only that write used, so a
lost or reordered write shows). Operations:

- ``("write", tag)`` -> ``index`` (RegisterJob): indexes only grow, so the
  new index must exceed the current one;
- ``("cas", expected, tag)`` -> ``index`` or ``False`` (RegisterJob with
  ``enforce_index``): applies only when the current index is
  ``expected``; ``False`` (refused: the index moved) only when it is not;
- ``("read",)`` -> ``(index, tag)`` (GetJob; ``(0, None)``: not found).

A write or CAS whose answer was lost (info) leaves the index unknown but
above the one before (``("gt", k)``) until a read shows it.

**Evaluations** (one register per evaluation; the value is its status):
- ``("create", status)`` -> ``True`` (UpsertEvaluations, unfenced): creates,
  or — the same create again — leaves an identical evaluation as it is
  (an identical re-create is OK with nothing written, whatever its status);
  ``False`` (FENCE_REQUIRED) only when a different one exists;
- ``("ack", status)`` -> ``True`` (the broker's Ack of a delivery: its
  outcome written to the state before the answer): a status transition,
  only from a non-terminal status (pending or blocked) to ``status``; an
  unknown one may have moved it or not;
- ``("read",)`` -> ``status`` or ``None`` (GetEvaluation; not found).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from drover.api.types.v1 import evaluation_pb2
from linearizability.checker import UNKNOWN, Model, Operation

JobState = tuple[int, Any]
#: Evaluation statuses an outcome (an Ack) may move from.
OPEN_STATUSES = frozenset({evaluation_pb2.EVALUATION_STATUS_PENDING,
                           evaluation_pb2.EVALUATION_STATUS_BLOCKED})


def _lower(index: Any) -> int:
    """An index, or ``("gt", k)``: some index above ``k`` (a write whose
    answer was lost: its index is unknown until a read shows it)."""
    return index if isinstance(index, int) else index[1]


def _is(index: Any, value: int) -> bool:
    """Whether ``index`` is (or, unknown, could be) ``value``."""
    return index == value if isinstance(index, int) else value > index[1]


def _job_step(state: Hashable, inp: Any, out: Any) -> tuple[bool, Hashable]:
    pair: tuple[Any, Any] = state  # type: ignore[assignment]
    index, tag = pair
    kind = inp[0]
    if kind == "read":
        if out is UNKNOWN:
            return True, state
        seen_index, seen_tag = out
        return (seen_tag == tag and _is(index, seen_index)), (seen_index, seen_tag)
    if kind == "write":
        if out is UNKNOWN:
            return True, (("gt", _lower(index)), inp[1])
        return out > _lower(index), (out, inp[1])
    if kind == "cas":
        expected, new_tag = inp[1], inp[2]
        if out is False:
            return not (isinstance(index, int) and index == expected), state
        if not _is(index, expected):
            return False, state
        if out is UNKNOWN:
            return True, (("gt", expected), new_tag)
        return out > expected, (out, new_tag)
    raise ValueError(f"unknown job operation {inp!r}")


def _describe_job(op: Operation) -> str:
    out = "?" if op.unknown else op.output
    return f"{' '.join(map(str, op.input))} -> {out}"


JOBS = Model(init=lambda: (0, None), step=_job_step, describe=_describe_job)


def _eval_step(state: Hashable, inp: Any, out: Any) -> tuple[bool, Hashable]:
    kind = inp[0]
    if kind == "read":
        return (out is UNKNOWN or out == state), state
    if kind == "create":
        status = inp[1]
        if out is False:
            return state is not None and state != status, state
        if state is None:
            return True, status
        return state == status, state  # the same create again: unchanged
    if kind == "ack":
        if state not in OPEN_STATUSES:
            return False, state  # absent, or an outcome already written
        return True, inp[1]
    raise ValueError(f"unknown evaluation operation {inp!r}")


EVALUATIONS = Model(init=lambda: None, step=_eval_step, describe=_describe_job)
