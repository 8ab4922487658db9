"""The soak's flat judge (bench/_soak_report.py) on made-up samples: growth
over the last half fails; a restarted process is judged past its warm-up,
and not at all when the run leaves too little of it."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from _soak_report import MIN_JUDGED_S, Sample, SoakRecord, judge_flat, slopes


def _record(minutes: float, rss: Callable[[float], float],
            pid: Callable[[float], int]) -> SoakRecord:
    """Samples every 10 s of one process ``p``: ``rss(t)`` MiB, ``pid(t)``."""
    rec = SoakRecord(minutes, 1)
    for i in range(int(minutes * 6)):
        t = i * 10.0 + 0.5
        rec.samples.append(Sample(t, {"p": rss(t)}, {"p": 20}, {"p": pid(t)}, 1.0, 1.0, {},
                                  0, 0, 1000, 10))
    return rec


def test_a_process_growing_over_the_last_half_fails_and_a_flat_one_passes() -> None:
    growing = _record(10, lambda t: 80 + 2 * t / 60, lambda t: 1)
    assert any("p: rss_mib grows 2.00/min" in p for p in judge_flat(growing))
    assert judge_flat(_record(10, lambda t: 80.0, lambda t: 1)) == []


def test_a_restarted_process_is_judged_past_its_warm_up() -> None:
    # an hour; killed at minute 36; the new process climbs for 4 minutes, then holds
    def rss(t: float) -> float:
        return 100.0 if t < 36 * 60 else 80 + min(t - 36 * 60, 240) / 12

    rec = _record(60, rss, lambda t: 1 if t < 36 * 60 else 2)
    assert abs(slopes(rec)["p"]["rss_mib"]) < 0.01 and judge_flat(rec) == []
    # ... and one that goes on climbing past it fails
    leak = _record(60, lambda t: 100.0 if t < 36 * 60 else 80 + (t - 36 * 60) / 30,
                   lambda t: 1 if t < 36 * 60 else 2)
    assert any("p: rss_mib grows 2.00/min" in p for p in judge_flat(leak))


def test_a_restart_too_late_to_judge_past_its_warm_up_is_not_judged() -> None:
    # ten minutes: the first processes' warm-up is the first half (5 minutes)
    def run(restart: float) -> SoakRecord:
        return _record(10, lambda t: 80 + 3 * max(0.0, t - restart) / 60,
                       lambda t: 1 if t < restart else 2)

    # killed at minute 2.5: judged from minute 7.5, 2.3 minutes of it
    early = run(150)
    assert 600 - 150 - 300 - 10 >= MIN_JUDGED_S
    assert any("p: rss_mib grows 3.00/min" in p for p in judge_flat(early))
    # killed at minute 4: 1 minute past its warm-up, too little to judge
    late = run(240)
    assert math.isnan(slopes(late)["p"]["rss_mib"]) and judge_flat(late) == []


def test_a_step_is_not_a_trend() -> None:
    """A fault's high-water mark (a step near the end of the half) is not
    growth; the same rise spread over the half is."""
    step = _record(10, lambda t: 100.0 if t < 500 else 106.0, lambda t: 1)
    assert judge_flat(step) == []
    trend = _record(10, lambda t: 100.0 + max(0.0, t - 300) * 1.5 / 60, lambda t: 1)
    assert any("p: rss_mib grows 1.50/min" in p for p in judge_flat(trend))


def test_a_slope_that_adds_up_to_less_than_the_noise_is_not_growth() -> None:
    # 1.1 MiB/min over the last half of a 10-minute run: 5.4 MiB, within 6
    small = _record(10, lambda t: 100.0 + max(0.0, t - 300) * 1.1 / 60, lambda t: 1)
    assert judge_flat(small) == []
    # the same slope over an hour's last half is 33 MiB: growth
    hour = _record(60, lambda t: 100.0 + max(0.0, t - 1800) * 1.1 / 60, lambda t: 1)
    assert any("p: rss_mib grows 1.10/min" in p for p in judge_flat(hour))
