"""The parts every RPC group of the state servicer shares."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from drover.coord.fence import Fence
from drover.state import codec
from drover.state.cache import Cache
from drover.state.reads import Reader
from drover.state.writes import MAX_OBJECT_OPS, Writer, fence_from


class Base:
    def __init__(
        self, cache: Cache, reader: Reader, writer: Writer, keys: codec.KeyCodec,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.cache, self.reader, self.writer, self.keys = cache, reader, writer, keys
        self._wall = wall

    def now(self) -> Timestamp:
        ts = Timestamp()
        ts.FromNanoseconds(int(self._wall() * 1e9))
        return ts

    def fence(self, context: Any) -> Fence | None:
        return fence_from(context)

    @staticmethod
    def writer_limit() -> int:
        return MAX_OBJECT_OPS
