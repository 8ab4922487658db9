"""The migrate block's defaults (Nomad's DefaultMigrateStrategy) and the
drain strategy's deadline rule."""

from __future__ import annotations

from drover.api.types.v1 import job_pb2, node_pb2
from drover.drain.migrate import Migrate, migrate_of, validate
from drover.drain.strategy import deadline_at, stamp


def test_an_unset_block_takes_nomads_defaults() -> None:
    m = migrate_of(job_pb2.TaskGroup(name="g"))
    assert m == Migrate(max_parallel=1, health_check="checks", min_healthy_time=10.0,
                        healthy_deadline=300.0)
    assert validate(m) == []


def test_set_fields_win_and_unset_ones_default_and_zero_parallel_is_kept() -> None:
    tg = job_pb2.TaskGroup(name="g", migrate=job_pb2.MigrateStrategy(max_parallel=0))
    tg.migrate.min_healthy_time.FromSeconds(2)
    m = migrate_of(tg)
    assert (m.max_parallel, m.min_healthy_time, m.healthy_deadline, m.health_check) == (
        0, 2.0, 300.0, "checks")


def test_validation_follows_nomad() -> None:
    assert validate(Migrate(max_parallel=-1))
    assert validate(Migrate(health_check="http"))
    assert validate(Migrate(min_healthy_time=300.0, healthy_deadline=300.0))


def _strategy(deadline: int) -> node_pb2.DrainStrategy:
    s = node_pb2.DrainStrategy()
    s.deadline.FromSeconds(deadline)
    return s


def test_deadline_positive_zero_and_force() -> None:
    now = 1_000 * 10**9
    s = stamp(_strategy(60), None, now)
    assert s.started_at.ToNanoseconds() == now
    assert deadline_at(s) == 1_060.0
    assert deadline_at(stamp(_strategy(0), None, now)) is None  # no deadline
    forced = _strategy(0)
    forced.force = True
    assert deadline_at(stamp(forced, None, now)) == float("-inf")


def test_an_update_keeps_started_at_and_restamps_the_deadline() -> None:
    first = stamp(_strategy(60), None, 1_000 * 10**9)
    second = stamp(_strategy(10), first, 1_030 * 10**9)
    assert second.started_at.ToNanoseconds() == 1_000 * 10**9
    assert deadline_at(second) == 1_040.0
