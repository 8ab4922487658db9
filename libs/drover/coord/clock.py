"""The clock seam: every timing decision takes a monotonic clock as a plain
callable, so the pure cores run under a virtual clock in unit tests."""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], float]

monotonic: Clock = time.monotonic

__all__ = ["Clock", "monotonic"]
