"""Recording a history as clients see it: ``invoke`` before the call,
then exactly one of ``ok`` / ``fail`` / ``info`` with its answer, times
from one monotonic clock (:func:`time.monotonic`, shared by every client
of the test process)."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from linearizability.checker import UNKNOWN, Operation


@dataclass
class _Open:
    client: int
    key: Hashable
    input: Any
    call: float


@dataclass
class History:
    clock: Callable[[], float] = time.monotonic
    ops: list[Operation] = field(default_factory=list)
    _open: dict[int, _Open] = field(default_factory=dict)
    _ids: itertools.count = field(default_factory=itertools.count)
    failed: int = 0

    def invoke(self, client: int, key: Hashable, inp: Any) -> int:
        """Record a call about to be made; its handle for the outcome."""
        handle = next(self._ids)
        self._open[handle] = _Open(client, key, inp, self.clock())
        return handle

    def ok(self, handle: int, output: Any) -> None:
        o = self._open.pop(handle)
        self.ops.append(Operation(o.client, o.key, o.input, o.call, output, self.clock()))

    def fail(self, handle: int) -> None:
        """It definitely did not take effect: left out of the history."""
        self._open.pop(handle)
        self.failed += 1

    def info(self, handle: int) -> None:
        """Unknown outcome (timeout, OUTCOME_UNKNOWN): it may have happened."""
        o = self._open.pop(handle)
        self.ops.append(Operation(o.client, o.key, o.input, o.call, UNKNOWN))

    def close(self) -> None:
        """Calls still open (the test stopped them) are unknown."""
        for handle in list(self._open):
            self.info(handle)

    def counts(self) -> dict[str, int]:
        known = sum(1 for o in self.ops if not o.unknown)
        return {"ok": known, "info": len(self.ops) - known, "fail": self.failed}
