"""A hot standby's deferred cancellations.

A standby applies the supersede rule exactly as the leader does, so that
its queues match the leader's, but it must not write. The cancellations it
would have written wait here, keyed by evaluation id, until either

* the event stream shows the evaluation terminal (the leader wrote the
  cancel, or the evaluation finished): the entry is discarded, or
* the standby is promoted: the remaining entries become effects, so a
  leader that died before writing them loses nothing.

While an id waits here the standby ignores pending updates for it: it has
already been superseded locally.
"""

from __future__ import annotations

from drover.api.types.v1.evaluation_pb2 import Evaluation
from drover.broker.core.effects import CancelSuperseded, Effect

__all__ = ["DeferredCancels"]


class DeferredCancels:
    __slots__ = ("_bodies", "_by_id")

    def __init__(self) -> None:
        # eval id -> (namespace, job_id, superseded by)
        self._by_id: dict[str, tuple[str, str, str]] = {}
        # eval id -> its body, when the effect carried it (to write the cancel)
        self._bodies: dict[str, Evaluation] = {}

    def defer(self, effects: list[Effect]) -> None:
        for effect in effects:
            if isinstance(effect, CancelSuperseded):
                bodies = {e.id: e for e in effect.evaluations}
                for eval_id in effect.eval_ids:
                    self._by_id[eval_id] = (effect.namespace, effect.job_id, effect.by)
                    body = bodies.get(eval_id)
                    if body is not None:
                        self._bodies[eval_id] = body

    def discard(self, eval_id: str) -> None:
        if self._by_id:  # (bodies are only kept for ids in _by_id)
            self._by_id.pop(eval_id, None)
            self._bodies.pop(eval_id, None)

    def __contains__(self, eval_id: object) -> bool:
        return eval_id in self._by_id

    def __len__(self) -> int:
        return len(self._by_id)

    def drain(self) -> list[Effect]:
        """Everything still deferred, one effect per (job, superseding evaluation)."""
        grouped: dict[tuple[str, str, str], list[str]] = {}
        for eval_id, group in self._by_id.items():
            grouped.setdefault(group, []).append(eval_id)
        bodies = self._bodies
        self._by_id = {}
        self._bodies = {}
        return [
            CancelSuperseded(
                ns, job, tuple(ids), by, tuple(bodies[i] for i in ids if i in bodies)
            )
            for (ns, job, by), ids in grouped.items()
        ]
