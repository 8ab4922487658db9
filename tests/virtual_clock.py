"""The one virtual clock of the test suite.

Every pure core takes its clock as a plain callable
(:data:`drover.coord.clock.Clock`); tests pass a :class:`VirtualClock`,
which moves only when the test says so. Importable from any test module
(pytest puts ``tests/`` on ``sys.path`` for its conftest), and offered as
the ``clock`` fixture by ``tests/conftest.py``.
"""

from __future__ import annotations

#: The wall-clock epoch a virtual clock's monotonic 0 corresponds to.
WALL0 = 1_700_000_000.0


class VirtualClock:
    """Monotonic seconds that move only when a test says so.

    ``clock()`` is the monotonic reading, ``clock.wall()`` the matching wall
    time (``WALL0 + now``); set ``clock.now`` or call :meth:`advance`."""

    def __init__(self, now: float = 0.0, *, wall0: float = WALL0) -> None:
        self.now = now
        self.wall0 = wall0

    def __call__(self) -> float:
        return self.now

    def wall(self) -> float:
        return self.wall0 + self.now

    def advance(self, seconds: float) -> float:
        if seconds < 0:
            raise ValueError("a monotonic clock does not go back")
        self.now += seconds
        return self.now
