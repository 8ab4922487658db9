"""Nomad's retryMax for partial commits (:mod:`drover.worker.attempts`)."""

from __future__ import annotations

from drover.worker.attempts import Attempts, attempt_limit


def test_limits_are_nomads() -> None:
    assert attempt_limit("service") == 5 and attempt_limit("batch") == 2
    assert attempt_limit("system") == 5


def test_progress_resets_the_count() -> None:
    a = Attempts(2)
    assert a.after(progress=False)
    assert a.after(progress=True)  # reset
    assert a.after(progress=False)
    assert not a.after(progress=False)
