"""Wall-clock seconds ⇄ protobuf Timestamp/Duration.

The core counts time in float epoch seconds (see the package docstring); the
protos store Timestamps and Durations. An unset Timestamp means "no time" and
reads as ``None``, never as the epoch, so an unarmed deadline can't fire.
"""

from __future__ import annotations

from collections.abc import Callable

from google.protobuf.duration_pb2 import Duration
from google.protobuf.timestamp_pb2 import Timestamp

WallClock = Callable[[], float]
"""Returns wall-clock epoch seconds, like ``time.time``."""


def to_timestamp(seconds: float) -> Timestamp:
    ts = Timestamp()
    ts.FromNanoseconds(round(seconds * 1e9))
    return ts


def from_timestamp(ts: Timestamp) -> float | None:
    if ts.seconds == 0 and ts.nanos == 0:
        return None
    return ts.seconds + ts.nanos / 1e9


def duration_seconds(duration: Duration) -> float:
    return duration.seconds + duration.nanos / 1e9
