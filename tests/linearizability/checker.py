"""Wing-Gong linearizability search with memoization, per key.

An :class:`Operation` is one client call as the client saw it: invoked at
``call``, answered at ``ret`` with ``output``. Outcomes:

- **ok**: it took effect, with ``output``, at one instant in (call, ret);
- **fail**: it definitely did not take effect (a refusal the server made
  before writing: a CAS that did not hold, a validation error). A failed
  *read* or *write* is simply left out of the history; a CAS's "did not
  hold" is an ok with output ``False``, since it observed the state;
- **info** (unknown: a timeout, OUTCOME_UNKNOWN): it may have taken
  effect at any instant after ``call`` or never (``ret`` is +inf, output
  unknown: the model accepts any output for it).

The search (Wing & Gong 1993, with Lowe's 2017 memoization as Porcupine
uses it): walk the time-ordered call/return entries; at a call, try to
linearize that operation now (the model accepts its output in the
current state), remove it and restart from the first entry; at a return
of an operation not yet linearized, undo the last choice and try the next
call after it. A (linearized set, state) pair seen before is not explored
again, which makes the search polynomial on most real histories. Success:
every ok operation is linearized (info operations may stay out).

P-compositionality: linearizability is local (Herlihy & Wing), so the
history is split by the model's ``partition`` (one key: one job, one
evaluation) and each part checked alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

#: Marks the output of an operation whose outcome is unknown (info).
UNKNOWN: Any = object()


@dataclass(frozen=True)
class Operation:
    client: int
    key: Hashable
    input: Any
    call: float
    output: Any = UNKNOWN
    ret: float = math.inf

    @property
    def unknown(self) -> bool:
        return self.output is UNKNOWN


@dataclass(frozen=True)
class Model:
    """``step(state, input, output) -> (ok, next_state)``; ``output`` is
    :data:`UNKNOWN` for an info operation (accept what it could have done).
    States must be hashable (the memo keys on them)."""

    init: Callable[[], Hashable]
    step: Callable[[Hashable, Any, Any], tuple[bool, Hashable]]
    describe: Callable[[Operation], str] = repr


@dataclass
class CheckResult:
    ok: bool
    #: Per key that failed: the operations of that key, for the report.
    bad_keys: dict[Hashable, list[Operation]] = field(default_factory=dict)
    explored: int = 0

    def report(self, model: Model, limit: int = 20) -> str:
        lines = []
        for key, ops in list(self.bad_keys.items())[:3]:
            lines.append(f"key {key!r}: not linearizable; its operations by call time:")
            lines.extend(f"  [{o.call:.6f} .. {o.ret:.6f}] client {o.client}: "
                         f"{model.describe(o)}" for o in ops[:limit])
        return "\n".join(lines)


class _Entry:
    __slots__ = ("call", "id", "match", "next", "op", "prev", "time")

    def __init__(self, op_id: int, op: Operation, call: bool, time: float) -> None:
        self.id, self.op, self.call, self.time = op_id, op, call, time
        self.match: _Entry | None = None
        self.prev: _Entry | None = None
        self.next: _Entry | None = None


def _entries(ops: Sequence[Operation]) -> _Entry:
    """The doubly-linked list of call and return entries in time order
    (returns before calls at equal times: an operation that returned at t
    precedes one called at t), behind a sentinel head."""
    items: list[tuple[float, int, int, _Entry]] = []
    for i, op in enumerate(ops):
        c = _Entry(i, op, True, op.call)
        r = _Entry(i, op, False, op.ret)
        c.match = r
        items.append((op.call, 1, i, c))
        items.append((op.ret, 0, i, r))
    items.sort(key=lambda t: (t[0], t[1], t[2]))
    head = _Entry(-1, ops[0], False, -math.inf)
    prev = head
    for *_, e in items:
        prev.next, e.prev = e, prev
        prev = e
    return head


def _lift(e: _Entry) -> None:
    """Remove a call entry and its return from the list."""
    for x in (e, e.match):
        assert x is not None
        assert x.prev is not None
        x.prev.next = x.next
        if x.next is not None:
            x.next.prev = x.prev


def _unlift(e: _Entry) -> None:
    for x in (e.match, e):
        assert x is not None
        assert x.prev is not None
        x.prev.next = x
        if x.next is not None:
            x.next.prev = x


def check_one(model: Model, ops: Sequence[Operation], budget: int = 2_000_000) -> (
    tuple[bool, int]
):
    """Whether the operations of one key are linearizable; (ok, steps).
    ``budget`` bounds the search (a history too hard to decide raises)."""
    if not ops:
        return True, 0
    head = _entries(ops)
    state: Hashable = model.init()
    linearized = 0  # bitset of operation ids
    memo: set[tuple[int, Hashable]] = set()
    stack: list[tuple[_Entry, Hashable]] = []
    e = head.next
    steps = 0
    while True:
        steps += 1
        if steps > budget:
            raise RuntimeError(f"linearizability search over {len(ops)} operations "
                               f"exceeded {budget} steps; check a smaller history")
        if e is None or (not e.call and e.op.unknown):
            # Every known operation is linearized (an info operation's
            # return is at +inf, after every known return): done.
            return True, steps
        if e.call:
            ok, after = model.step(state, e.op.input, e.op.output)
            if ok:
                key = (linearized | (1 << e.id), after)
                if key not in memo:
                    memo.add(key)
                    stack.append((e, state))
                    linearized |= 1 << e.id
                    state = after
                    _lift(e)
                    e = head.next
                    continue
            e = e.next
            continue
        # The return of an operation not linearized: undo the last choice.
        if not stack:
            return False, steps
        top, state = stack.pop()
        linearized &= ~(1 << top.id)
        _unlift(top)
        e = top.next


def check(model: Model, ops: Iterable[Operation], budget: int = 2_000_000) -> CheckResult:
    """Check a whole history, one key at a time (module doc)."""
    by_key: dict[Hashable, list[Operation]] = {}
    for op in ops:
        by_key.setdefault(op.key, []).append(op)
    result = CheckResult(True)
    for key, part in by_key.items():
        part.sort(key=lambda o: o.call)
        ok, steps = check_one(model, part, budget)
        result.explored += steps
        if not ok:
            result.ok = False
            result.bad_keys[key] = part
    return result
