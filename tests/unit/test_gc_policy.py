"""The GC policy (drover.gc_policy) as the broker uses it: the young
threshold is only ever raised, and what the broker holds is frozen after a
big restore (not collected) and every ``freeze_every`` applied events
(collected first: a garbage cycle frozen would never be freed)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from drover.gc_policy import GcPolicy, GcPolicyConfig


@pytest.fixture(autouse=True)
def _restore_gc() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.set_threshold(*threshold)
    gc.unfreeze()


def test_the_young_threshold_is_raised_never_lowered() -> None:
    gc.set_threshold(700, 10, 10)
    GcPolicy(GcPolicyConfig(young_threshold=4000)).start()
    assert gc.get_threshold() == (4000, 10, 10)
    GcPolicy(GcPolicyConfig(young_threshold=1000)).start()
    assert gc.get_threshold() == (4000, 10, 10)
    GcPolicy(GcPolicyConfig(young_threshold=0)).start()
    assert gc.get_threshold() == (4000, 10, 10)


def test_a_big_restore_and_then_every_n_events_are_frozen() -> None:
    gc.unfreeze()
    policy = GcPolicy(GcPolicyConfig(freeze_every=100, freeze_min_restore=50))
    policy.restored(10)
    assert policy.freezes == 0 and gc.get_freeze_count() == 0
    held = [[i] for i in range(1000)]  # tracked objects, alive
    policy.restored(50)
    assert policy.freezes == 1 and gc.get_freeze_count() >= len(held)
    gc.unfreeze()
    for _ in range(9):
        policy.applied(10)
    assert policy.freezes == 1 and gc.get_freeze_count() == 0
    policy.applied(10)
    assert policy.freezes == 2 and gc.get_freeze_count() >= len(held)
    policy.applied(99)
    assert policy.freezes == 2


def test_freezing_can_be_turned_off() -> None:
    policy = GcPolicy(GcPolicyConfig(freeze_every=0))
    policy.applied(10**9)
    assert policy.freezes == 0


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_garbage_cycles_are_collected_before_a_periodic_freeze() -> None:
    """A cycle that became garbage before the freeze is freed, not frozen
    for good (the state replicas' growth of the one-hour soak: every error
    answered leaves a cycle of exception, traceback and frames)."""
    import weakref

    gc.unfreeze()
    gc.disable()  # only this policy's collection may free the cycle
    try:
        policy = GcPolicy(GcPolicyConfig(freeze_every=10))
        garbage = _Cycle()
        gone = weakref.ref(garbage)
        del garbage
        policy.applied(10)
        assert policy.freezes == 1
        assert policy.longest_pause > 0  # measured and logged: the process's pause
        gc.unfreeze()
        assert gone() is None
    finally:
        gc.enable()
