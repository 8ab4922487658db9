"""The worker's plan-step totals (drover.worker.timing): what the scale
benchmark reads back from its log."""

from __future__ import annotations

from drover.worker.timing import LOG_PREFIX, STEPS, StepTimes, parse


def test_steps_add_up_and_survive_the_log_line() -> None:
    times = StepTimes()
    for _ in range(3):
        with times.step("pack"):
            sum(range(1000))
    with times.step("submit"):
        pass
    got = parse(f"worker INFO {times.line()}")
    assert got is not None and set(got) == set(STEPS)
    assert got["pack"]["n"] == 3 and got["submit"]["n"] == 1 and got["read"]["n"] == 0
    assert got["pack"]["s"] >= 0.0


def test_a_step_that_raises_still_counts() -> None:
    times = StepTimes()
    try:
        with times.step("read"):
            raise RuntimeError("refused")
    except RuntimeError:
        pass
    assert times.counts["read"] == 1


def test_other_lines_are_not_timing() -> None:
    assert parse("worker INFO evaluation x: plan committed in part") is None
    assert parse(f"worker INFO {LOG_PREFIX}not json") is None
