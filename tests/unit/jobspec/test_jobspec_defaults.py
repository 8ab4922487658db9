"""drover.jobspec.defaults: one test per Nomad default, plus the rules
that keep what the user set (an explicit 0, a partial update block)."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf.duration_pb2 import Duration

from drover.api.types.v1 import job_pb2
from drover.cli.jobs import load_job
from drover.jobspec.defaults import canonicalize

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def _job(**kw: object) -> job_pb2.Job:
    kw.setdefault("task_groups", [job_pb2.TaskGroup(name="g")])
    return job_pb2.Job(id="j", **kw)  # type: ignore[arg-type]


def _canon(job: job_pb2.Job) -> job_pb2.Job:
    canonicalize(job)
    return job


def test_namespace_defaults_to_default() -> None:
    assert _canon(_job()).namespace == "default"


def test_priority_defaults_to_50() -> None:
    assert _canon(_job()).priority == 50


def test_type_defaults_to_service() -> None:
    assert _canon(_job()).type == job_pb2.JOB_TYPE_SERVICE


def test_datacenters_default_to_every_datacenter() -> None:
    assert list(_canon(_job()).datacenters) == ["*"]
    assert list(_canon(_job(datacenters=["dc2"])).datacenters) == ["dc2"]


def test_count_defaults_to_1_and_an_explicit_0_stays() -> None:
    job = _canon(_job(task_groups=[job_pb2.TaskGroup(name="a"),
                                   job_pb2.TaskGroup(name="b", count=0),
                                   job_pb2.TaskGroup(name="c", count=4)]))
    assert [tg.count for tg in job.task_groups] == [1, 0, 4]


def test_update_max_parallel_defaults_to_1_and_an_explicit_0_stays() -> None:
    job = _canon(_job(task_groups=[
        job_pb2.TaskGroup(name="a"),
        job_pb2.TaskGroup(name="b", update=job_pb2.UpdateStrategy(max_parallel=0)),
    ]))
    assert job.task_groups[0].update.max_parallel == 1
    assert job.task_groups[1].HasField("update")
    assert job.task_groups[1].update.max_parallel == 0


@pytest.mark.parametrize("field,seconds", [
    ("min_healthy_time", 10), ("healthy_deadline", 300), ("progress_deadline", 600),
])
def test_update_durations_default_to_nomads(field: str, seconds: int) -> None:
    u = _canon(_job()).task_groups[0].update
    assert getattr(u, field) == Duration(seconds=seconds)


def test_update_canary_and_flags_default_off() -> None:
    u = _canon(_job()).task_groups[0].update
    assert (u.canary, u.auto_revert, u.auto_promote) == (0, False, False)


def test_a_partial_update_block_keeps_what_is_set() -> None:
    tg = job_pb2.TaskGroup(name="g", update=job_pb2.UpdateStrategy(
        canary=2, min_healthy_time=Duration(seconds=1), progress_deadline=Duration()))
    u = _canon(_job(task_groups=[tg])).task_groups[0].update
    assert (u.canary, u.max_parallel) == (2, 1)
    assert u.min_healthy_time == Duration(seconds=1)
    assert u.healthy_deadline == Duration(seconds=300)
    assert u.HasField("progress_deadline") and u.progress_deadline == Duration()


def test_batch_jobs_get_no_update_strategy() -> None:
    job = _canon(_job(type=job_pb2.JOB_TYPE_BATCH))
    assert not job.task_groups[0].HasField("update")
    assert job.task_groups[0].count == 1


def test_system_jobs_get_the_update_strategy() -> None:
    job = _canon(_job(type=job_pb2.JOB_TYPE_SYSTEM))
    assert job.task_groups[0].update.max_parallel == 1


def test_task_resources_default_to_100_mhz_and_300_mb() -> None:
    job = _canon(_job(task_groups=[job_pb2.TaskGroup(name="g", tasks=[job_pb2.Task(name="t")])]))
    res = job.task_groups[0].tasks[0].resources
    assert (res.cpu, res.memory_mb) == (100, 300)


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_examples_are_unchanged_where_set_and_canonicalizing_is_idempotent(path: Path) -> None:
    src = load_job(str(path))
    once = _canon(job_pb2.Job.FromString(src.SerializeToString()))
    twice = _canon(job_pb2.Job.FromString(once.SerializeToString()))
    assert once == twice
    assert list(once.datacenters) == list(src.datacenters)
    for a, b in zip(src.task_groups, once.task_groups, strict=True):
        assert a.count == b.count
        if a.HasField("update"):
            for f in ("max_parallel", "canary", "min_healthy_time", "healthy_deadline",
                      "progress_deadline", "auto_revert", "auto_promote"):
                assert getattr(a.update, f) == getattr(b.update, f), f
