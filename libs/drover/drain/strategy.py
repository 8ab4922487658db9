"""A drain strategy's deadline (Nomad's ``DrainStrategy.DeadlineTime``) and
how a new or changed drain is stamped (``Node.UpdateDrain``).

- ``force`` (Nomad's negative deadline; drover refuses negative durations):
  the deadline has already passed;
- ``deadline`` == 0: no deadline;
- ``deadline`` > 0: the deadline is ``force_deadline`` (``started_at + deadline``).

``started_at`` is kept across updates of a running drain; ``force_deadline``
is recomputed from the update's time, as Nomad does.
"""

from __future__ import annotations

from drover.api.types.v1 import node_pb2

#: The CLI's default ``--deadline`` (Nomad's ``-deadline`` default).
DEFAULT_DEADLINE = 3600.0


def _seconds(d: object) -> float:
    return float(getattr(d, "seconds", 0) + getattr(d, "nanos", 0) / 1e9)


def deadline_at(s: node_pb2.DrainStrategy) -> float | None:
    """Seconds since the epoch after which everything left is stopped; None: never.
    A force drain answers -inf (already past)."""
    if s.force:
        return float("-inf")
    d = _seconds(s.deadline)
    if d == 0:
        return None
    return _seconds(s.force_deadline)


def stamp(new: node_pb2.DrainStrategy, old: node_pb2.DrainStrategy | None,
          now_ns: int) -> node_pb2.DrainStrategy:
    """``new`` as stored: ``started_at`` kept from a running drain (else now),
    ``force_deadline`` = now + deadline when the deadline is positive."""
    out = node_pb2.DrainStrategy()
    out.CopyFrom(new)
    if old is not None and old.started_at.ByteSize():
        out.started_at.CopyFrom(old.started_at)
    else:
        out.started_at.FromNanoseconds(now_ns)
    out.ClearField("force_deadline")
    d = new.deadline.seconds * 10**9 + new.deadline.nanos
    if d > 0:
        out.force_deadline.FromNanoseconds(now_ns + d)
    return out
