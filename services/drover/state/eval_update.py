"""UpdateEvaluations: updates that never create, creates that never update.

The eval broker's outcomes (Ack, Nack, cancel, failure) change the
evaluation it handed out, so they are written as *updates*: each one is
compared, inside the etcd txn, on the mod_revision the writer held
(``modify_index``). An evaluation deleted meanwhile (DeleteEvaluations while
a worker held it) is therefore never re-created by a late Ack, and one
changed meanwhile (superseded, cancelled) is never overwritten by a stale
body. Follow-up evaluations written with an outcome are *creates* of new
ids, compared absent, so a worker cannot overwrite an existing evaluation by
naming it as a follow-up.

All or nothing, one txn (fenced when the call carries ``drover-fence``).
When a compare fails the call re-syncs the cache and names the first
evaluation at fault: :class:`EvaluationGone` (NOT_FOUND),
:class:`EvaluationChanged` (FAILED_PRECONDITION) or
:class:`EvaluationExists` (ALREADY_EXISTS), each with ``eval_id`` in the
ErrorInfo metadata. Nothing is retried that a retry could not fix: a failed
compare is the caller's answer, not a transient conflict.
"""

from __future__ import annotations

from typing import Any

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import evaluation_pb2
from drover.coord.fence import Fence
from drover.errors import AlreadyExists, Conflict, FailedPrecondition, InvalidArgument, NotFound
from drover.state import codec
from drover.state.evaluations import OUTCOMES, validated_evals
from drover.state.service_base import Base
from drover.state.store import Compare, Op, Put

__all__ = ["EvaluationChanged", "EvaluationExists", "EvaluationGone", "EvaluationUpdateRpc"]

RETRIES = 3


class EvaluationGone(NotFound):
    """An update names an evaluation that no longer exists (deleted)."""

    reason = "EVALUATION_GONE"


class EvaluationChanged(FailedPrecondition):
    """An update's modify_index is not the evaluation's current one."""

    reason = "EVALUATION_CHANGED"


class EvaluationExists(AlreadyExists):
    """A create names an evaluation id that exists already."""

    reason = "EVALUATION_EXISTS"


def _validate(request: Any) -> tuple[list[evaluation_pb2.Evaluation],
                                     list[evaluation_pb2.Evaluation]]:
    if not request.updates and not request.creates:
        raise InvalidArgument("set updates, creates or both", metadata={"field": "updates"})
    updates = validated_evals(request.updates, "updates")
    creates = validated_evals(request.creates, "creates")
    for i, ev in enumerate(updates):
        if ev.modify_index == 0:
            raise InvalidArgument(
                f"updates[{i}].modify_index is required: the index of the evaluation "
                "the update is based on", metadata={"field": f"updates[{i}].modify_index"})
    seen: set[tuple[str, str]] = set()
    for field, evs in (("updates", updates), ("creates", creates)):
        for i, ev in enumerate(evs):
            ident = (ev.namespace, ev.id)
            if ident in seen:
                raise InvalidArgument(f"{field}[{i}]: evaluation {ev.id!r} appears twice",
                                      metadata={"field": f"{field}[{i}].id"})
            seen.add(ident)
    return updates, creates


class EvaluationUpdateRpc(Base):
    async def UpdateEvaluations(self, request: Any, context: Any) -> Any:
        updates, creates = _validate(request)
        self.writer.check_size(len(updates) + len(creates), "evaluations")
        # Updates are broker outcomes, as are terminal statuses: leader only.
        if updates or any(ev.status in OUTCOMES for ev in creates):
            fence: Fence | None = self.require_fence(context, "UpdateEvaluations")
        else:
            fence = self.fence(context)
            if fence is not None:
                self.require_fence(context, "UpdateEvaluations")
        now = self.now()
        compares: list[Compare] = []
        ops: list[Op] = []
        for ev in updates:
            key = self.keys.key(codec.EVALUATIONS, ev.namespace, ev.id)
            compares.append(Compare(key, "mod", ev.modify_index))
            ev.modify_time.CopyFrom(now)
            ops.append(Put(key, codec.encode(ev)))
        for ev in creates:
            key = self.keys.key(codec.EVALUATIONS, ev.namespace, ev.id)
            compares.append(Compare(key, "mod", 0))
            if not ev.HasField("create_time"):
                ev.create_time.CopyFrom(now)
            ev.modify_time.CopyFrom(now)
            ops.append(Put(key, codec.encode(ev)))
        for attempt in range(RETRIES):
            try:
                rev = await self.writer.commit(compares, ops, fence)
            except Conflict:
                # The compares are the caller's, not a cache's: find which one
                # failed on a fresh view and say so.
                await self.cache.sync()
                self._diagnose(updates, creates)
                if attempt == RETRIES - 1:
                    raise
                continue
            return state_pb2.UpdateEvaluationsResponse(index=rev)
        raise AssertionError("unreachable")

    def _diagnose(self, updates: list[evaluation_pb2.Evaluation],
                  creates: list[evaluation_pb2.Evaluation]) -> None:
        table = self.cache.tables[codec.EVALUATIONS]
        for ev in updates:
            entry = table.objects.get(f"{ev.namespace}/{ev.id}")
            meta = {"eval_id": ev.id}
            if entry is None:
                raise EvaluationGone(
                    f"evaluation {ev.id!r} no longer exists (deleted); nothing was written",
                    metadata=meta)
            if entry[1] != ev.modify_index:
                current = table.decode_entry(entry)
                status = evaluation_pb2.EvaluationStatus.Name(current.status)
                raise EvaluationChanged(
                    f"evaluation {ev.id!r} changed since index {ev.modify_index} (it is at "
                    f"{entry[1]}, {status}); nothing was written",
                    metadata={**meta, "modify_index": str(entry[1]), "status": status})
        for ev in creates:
            if table.objects.get(f"{ev.namespace}/{ev.id}") is not None:
                raise EvaluationExists(
                    f"evaluation {ev.id!r} exists already; a create needs a new id",
                    metadata={"eval_id": ev.id})
