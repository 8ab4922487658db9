"""The writer's batching policy: which queued writes form the next txn (pure).

:class:`~drover.broker.writer.FencedWriter` sends its queue as batches,
each one ``UpdateEvaluations`` call (one etcd txn). This module decides,
without I/O, what the next batch is and what it writes; the writer's async
flight loop does the rest.

Invariants of :func:`next_batch` (FIFO, one fence, per-evaluation order):

* a batch is the queue's head and what follows it, in order: nothing
  overtakes a write queued earlier;
* at most ``limit`` evaluation ids (updates and creates), except that a
  head bigger than that goes alone (the writer refuses such groups when
  they are queued);
* one fence: writes under different fences (an Ack of a past term's
  delivery) never share a txn;
* it stops at the first write that touches an evaluation id still in
  flight (``busy``): per evaluation, writes reach the store in the order
  they were made, and whatever queued behind it waits too.

:func:`merge_writes` turns a batch into the txn's updates and creates: an
evaluation updated twice keeps its last body (etcd refuses duplicate keys
in a txn). :func:`smaller_cap` reads the cap a state replica's refusal of
too big a txn names.

Pure: no asyncio, no grpc, no etcd (it is under :mod:`drover.broker.core`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import Protocol, TypeVar

from drover.api.types.v1.evaluation_pb2 import Evaluation
from drover.broker.core.effects import WriteGroup
from drover.coord.fence import Fence
from drover.errors import DroverError, InvalidArgument

__all__ = ["Batchable", "merge_writes", "next_batch", "smaller_cap"]


class Batchable(Protocol):
    """What the policy reads of a queued write."""

    @property
    def group(self) -> WriteGroup: ...

    @property
    def fence(self) -> Fence | None: ...


_W = TypeVar("_W", bound=Batchable)


def next_batch(queue: deque[_W], busy: Mapping[str, int],
               limit: int) -> tuple[list[_W], list[str]]:
    """Pop the next batch off ``queue`` and the evaluation ids it writes:
    the queue's head and what follows it, up to ``limit`` ids, one fence,
    and stopping at the first write that touches an evaluation in ``busy``
    (FIFO per evaluation)."""
    batch: list[_W] = []
    ids: list[str] = []
    while queue:
        head = queue[0]
        group = head.group
        mine = [ev.id for ev in group.evaluations]
        if group.creates:
            mine += [ev.id for ev in group.creates]
        if batch and (len(ids) + len(mine) > limit or head.fence != batch[0].fence):
            break
        if busy and not busy.keys().isdisjoint(mine):
            break
        batch.append(queue.popleft())
        ids += mine
    return batch, ids


def merge_writes(batch: Sequence[Batchable]) -> tuple[list[Evaluation], list[Evaluation]]:
    """The txn's updates and creates: per id, the last body written."""
    updates: dict[str, Evaluation] = {}
    creates: dict[str, Evaluation] = {}
    for item in batch:
        for ev in item.group.evaluations:
            updates.pop(ev.id, None)
            updates[ev.id] = ev
        for ev in item.group.creates:
            creates[ev.id] = ev
    return list(updates.values()), list(creates.values())


def smaller_cap(err: DroverError, current: int) -> int | None:
    """The per-write cap a too-big write's refusal names, if below ``current``.

    The state service refuses a request over its cap INVALID_ARGUMENT with
    the cap in the ErrorInfo (``max_objects``): a replica told a smaller
    ``--max-txn-ops`` than this broker. Only a smaller cap is taken (a
    refusal naming the writer's own cap or more is about something else),
    so a batch is re-cut at most once per refusal and never loops."""
    if not isinstance(err, InvalidArgument):
        return None
    try:
        cap = int(err.metadata.get("max_objects", ""))
    except ValueError:
        return None
    return cap if 1 <= cap < current else None
