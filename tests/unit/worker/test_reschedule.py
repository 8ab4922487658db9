"""Nomad's reschedule policy rules (drover.worker.reschedule), on a virtual clock.

Cases follow Nomad's structs tests (TestAllocation_NextDelay,
TestRescheduleTracker_RescheduleEligible, TestReschedulePolicy_Validate).
"""

from __future__ import annotations

import pytest
from google.protobuf.duration_pb2 import Duration

from drover.api.types.v1 import allocation_pb2, job_pb2
from drover.worker import reschedule as r
from drover.worker.reschedule import Event, Policy

H = 3600.0


def _d(s: float) -> Duration:
    out = Duration()
    out.FromNanoseconds(int(s * 1e9))
    return out


# -- defaults, one by one -------------------------------------------------------

def test_service_default_delay_30s() -> None:
    assert r.resolve(job_pb2.JOB_TYPE_SERVICE, None).delay == 30.0  # type: ignore[union-attr]


def test_service_default_exponential() -> None:
    p = r.resolve(job_pb2.JOB_TYPE_SERVICE, None)
    assert p is not None and p.delay_function == "exponential"


def test_service_default_max_delay_1h() -> None:
    assert r.resolve(job_pb2.JOB_TYPE_SERVICE, None).max_delay == H  # type: ignore[union-attr]


def test_service_default_unlimited_no_attempts() -> None:
    p = r.resolve(job_pb2.JOB_TYPE_SERVICE, None)
    assert p is not None and p.unlimited and p.attempts == 0 and p.interval == 0


def test_batch_default_one_attempt_in_24h() -> None:
    p = r.resolve(job_pb2.JOB_TYPE_BATCH, None)
    assert p is not None and (p.attempts, p.interval, p.unlimited) == (1, 24 * H, False)


def test_batch_default_delay_5s_constant() -> None:
    p = r.resolve(job_pb2.JOB_TYPE_BATCH, None)
    assert p is not None and (p.delay, p.delay_function, p.max_delay) == (5.0, "constant", 0.0)


def test_system_jobs_have_no_policy() -> None:
    assert r.resolve(job_pb2.JOB_TYPE_SYSTEM, job_pb2.ReschedulePolicy(attempts=3)) is None


def test_defaults_are_valid() -> None:
    assert r.problems(r.SERVICE_DEFAULT) == [] and r.problems(r.BATCH_DEFAULT) == []


def test_block_fields_merge_over_the_default() -> None:
    block = job_pb2.ReschedulePolicy(delay=_d(10), unlimited=False, attempts=3, interval=_d(H))
    p = r.resolve(job_pb2.JOB_TYPE_SERVICE, block)
    assert p == Policy(attempts=3, interval=H, delay=10.0, delay_function="exponential",
                       max_delay=H, unlimited=False)


def test_explicit_zero_attempts_disables_batch_rescheduling() -> None:
    p = r.resolve(job_pb2.JOB_TYPE_BATCH, job_pb2.ReschedulePolicy(attempts=0))
    assert p is not None and not p.enabled


def test_policy_for_reads_the_group() -> None:
    job = job_pb2.Job(type=job_pb2.JOB_TYPE_BATCH, task_groups=[job_pb2.TaskGroup(
        name="g", reschedule=job_pb2.ReschedulePolicy(attempts=2))])
    assert r.policy_for(job, "g").attempts == 2  # type: ignore[union-attr]
    assert r.policy_for(job, "other") is None


# -- validation (Nomad's ReschedulePolicy.Validate) -----------------------------

@pytest.mark.parametrize(("policy", "fragment"), [
    (Policy(attempts=3, interval=0, delay=5, unlimited=False), "interval must be set"),
    (Policy(attempts=3, interval=H, delay=5, unlimited=True), "ambiguous"),
    (Policy(unlimited=True, delay=1), "delay cannot be less than 5s"),
    (Policy(unlimited=True, delay=5, delay_function="linear"), "not one of"),
    (Policy(unlimited=True, delay=30, delay_function="exponential", max_delay=10),
     "max_delay cannot be less than delay"),
    (Policy(attempts=1, interval=10, delay=5), "interval cannot be less than 15s"),
    (Policy(attempts=5, interval=20, delay=5), "only 4 attempts fit"),
])
def test_invalid_policies(policy: Policy, fragment: str) -> None:
    assert any(fragment in p for p in r.problems(policy)), r.problems(policy)


def test_disabled_policy_is_valid_whatever_else() -> None:
    assert r.problems(Policy(attempts=0, unlimited=False, delay=0)) == []


def test_viable_attempts_exponential() -> None:
    # 5, 10, 20 (< 40): three fit; a fourth (40) does not.
    p = Policy(attempts=4, interval=40, delay=5, delay_function="exponential", max_delay=H)
    assert r.viable_attempts(p)[:2] == (False, 3)


def test_viable_attempts_fibonacci() -> None:
    p = Policy(attempts=5, interval=H, delay=5, delay_function="fibonacci", max_delay=H)
    assert r.viable_attempts(p)[0] is True


# -- NextDelay -----------------------------------------------------------------

EXP = Policy(unlimited=True, delay=5, delay_function="exponential", max_delay=90)
FIB = Policy(unlimited=True, delay=5, delay_function="fibonacci", max_delay=50)
CONST = Policy(unlimited=True, delay=5, delay_function="constant")


def test_first_delay_is_the_policy_delay() -> None:
    assert r.next_delay(EXP, [], 100) == 5


def test_no_policy_no_delay() -> None:
    assert r.next_delay(None, [Event(0, delay=5)], 100) == 0


def test_constant_stays() -> None:
    assert r.next_delay(CONST, [Event(0, delay=5), Event(10, delay=5)], 20) == 5


def test_exponential_doubles_the_last() -> None:
    assert r.next_delay(EXP, [Event(0, delay=5), Event(10, delay=10)], 30) == 20


def test_exponential_capped_at_max_delay() -> None:
    assert r.next_delay(EXP, [Event(0, delay=80)], 50) == 90


def test_capped_delay_resets_after_running_longer_than_max_delay() -> None:
    # last reschedule at t=0, failed at t=200 > 90 after it: back to delay.
    assert r.next_delay(EXP, [Event(0, delay=80)], 200) == 5


def test_uncapped_delay_never_resets() -> None:
    assert r.next_delay(EXP, [Event(0, delay=10)], 10_000) == 20


def test_fibonacci_series() -> None:
    events: list[Event] = []
    seen = []
    t = 0.0
    for _ in range(6):
        d = r.next_delay(FIB, events, t)
        seen.append(d)
        events.append(Event(t, delay=d))
        t += d + 1  # failed again shortly after each reschedule
    assert seen == [5, 5, 10, 15, 25, 40]


def test_fibonacci_one_event_gives_delay() -> None:
    assert r.next_delay(FIB, [Event(0, delay=5)], 6) == 5


def test_fibonacci_restarts_after_a_reset() -> None:
    # max_delay then a reset to delay: the series starts again (5, not 55).
    assert r.next_delay(FIB, [Event(0, delay=50), Event(10, delay=5)], 20) == 5


# -- eligibility and the next time ----------------------------------------------

LIMITED = Policy(attempts=2, interval=60, delay=5, delay_function="constant")


def test_unlimited_always_eligible() -> None:
    assert r.eligible(EXP, [Event(i, delay=5) for i in range(50)], 60)


def test_disabled_never_eligible() -> None:
    assert not r.eligible(Policy(), [], 0)
    assert not r.eligible(None, [], 0)


def test_limited_counts_events_within_the_interval() -> None:
    events = [Event(0, delay=5), Event(30, delay=5)]
    assert not r.eligible(LIMITED, events, 40)      # both within 60s of the failure
    assert r.eligible(LIMITED, events, 65)          # the first fell out of the window
    assert r.eligible(LIMITED, [], 40)


def test_next_time_is_fail_time_plus_delay() -> None:
    assert r.next_reschedule_time(LIMITED, [Event(0, delay=5)], 10) == (15, True)


def test_next_time_spent_policy_not_eligible() -> None:
    events = [Event(0, delay=5), Event(10, delay=5)]
    assert r.next_reschedule_time(LIMITED, events, 20) == (25, False)


def test_next_time_delay_not_shorter_than_interval_not_eligible() -> None:
    p = Policy(attempts=3, interval=20, delay=5, delay_function="exponential", max_delay=H)
    assert r.next_reschedule_time(p, [Event(0, delay=10)], 1)[1] is False  # 20 !< 20


def test_next_time_without_fail_time_not_eligible() -> None:
    assert r.next_reschedule_time(EXP, [], 0) == (0.0, False)


# -- the replacement's tracker ---------------------------------------------------

def test_limited_tracker_keeps_events_within_interval() -> None:
    old = [Event(0, "a", delay=5), Event(50, "b", delay=5)]
    out = r.tracker_for_replacement(LIMITED, old, "c", "n1", fail_time=100, now=101)
    assert [e.prev_alloc_id for e in out] == ["b", "c"]
    assert out[-1] == Event(101, "c", "n1", 5)


def test_unlimited_tracker_keeps_the_last_five() -> None:
    old = [Event(i, f"a{i}", delay=5) for i in range(8)]
    out = r.tracker_for_replacement(CONST, old, "x", "n", fail_time=9, now=10)
    assert [e.prev_alloc_id for e in out] == ["a3", "a4", "a5", "a6", "a7", "x"]


def test_tracker_event_carries_the_delay_taken() -> None:
    out = r.tracker_for_replacement(EXP, [Event(0, delay=5)], "x", "n", fail_time=3, now=13)
    assert out[-1].delay == 10


def test_later_batches_share_a_5s_window() -> None:
    got = r.batch_later([(100, "a"), (112, "d"), (104, "b"), (105, "c")])
    assert got == [(100, ["a", "b", "c"]), (112, ["d"])]


def test_alloc_fail_time_prefers_finished_at() -> None:
    a = allocation_pb2.Allocation()
    a.modify_time.FromSeconds(200)
    assert r.fail_time(a) == 200
    a.finished_at.FromSeconds(150)
    assert r.fail_time(a) == 150


def test_tracker_proto_round_trip() -> None:
    events = [Event(10.5, "a", "n", 5.0), Event(20, "b", "m", 10.0)]
    a = allocation_pb2.Allocation(reschedule_tracker=r.tracker_proto(events))
    assert r.events_of(a) == events
