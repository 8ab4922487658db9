"""drover.state.jobs.core.job_versions: Nomad's tracked versions, and revert."""

from __future__ import annotations

import pytest
from state_core_data import KEYS, context, service_job, stored, view

from drover.coord.kv import Compare, Delete
from drover.errors import InvalidArgument, NotFound
from drover.state.core import codec
from drover.state.errors import JobVersionMismatch
from drover.state.jobs.core import job_versions
from drover.state.jobs.core import register as jobs


def test_the_newest_n_are_kept() -> None:
    versions = [(v, False) for v in range(9)]
    assert job_versions.doomed(versions, 6) == [0, 1, 2]
    assert job_versions.doomed(versions[:6], 6) == []


def test_the_newest_stable_version_is_kept_past_the_limit() -> None:
    versions = [(v, v in (1, 2)) for v in range(9)]
    assert job_versions.doomed(versions, 6) == [0, 1]  # 2 is the newest stable: kept


def _versions(n: int, stable: tuple[int, ...] = ()) -> list[tuple[str, object, int, int]]:
    job = stored(service_job(), n - 1)
    data: list[tuple[str, object, int, int]] = [(codec.JOBS, job, 1, 100)]
    for v in range(n):
        rec = stored(service_job(count=v + 1), v)
        rec.stable = v in stable
        data.append((codec.JOB_VERSIONS, rec, 10 + v, 10 + v))
    return data


def test_a_new_version_deletes_the_oldest_compared_on_its_revision() -> None:
    v = view(_versions(6))
    plan = jobs.plan_register(v, context(), service_job(count=42))
    pruned = job_versions.prune(v, plan, context().keys, 6, 127)
    assert Compare(KEYS.version_key("default", "web", 0), "mod", 10) in pruned.compares
    deletes = [e for e in pruned.events if e.op == "delete"]
    assert [e.id for e in deletes] == [f"web/{0:020d}"]
    assert isinstance(pruned.ops[-1], Delete)


def test_a_plan_that_writes_no_version_is_left_as_it_is() -> None:
    v = view(_versions(8))
    plan = jobs.plan_register(v, context(), service_job())  # the spec it runs: unchanged
    assert job_versions.prune(v, plan, context().keys, 6, 127) is plan


def test_revert_registers_the_versions_spec_as_the_next_version() -> None:
    v = view(_versions(3))
    plan = jobs.plan_revert(v, context(), "default", "web", 0)
    job = codec.decode(codec.JOBS, plan.ops[0].value, 1, 101)  # type: ignore[union-attr]
    assert (job.version, job.task_groups[0].count, job.stable) == (3, 1, False)
    resp = plan.respond(101)
    assert (resp.version, resp.reverted_to) == (3, 0)


def test_revert_refusals_say_what_nomad_says() -> None:
    v = view(_versions(3))
    with pytest.raises(InvalidArgument, match="can't revert to current version"):
        jobs.plan_revert(v, context(), "default", "web", 2)
    with pytest.raises(NotFound, match="at version 9 not found"):
        jobs.plan_revert(v, context(), "default", "web", 9)
    with pytest.raises(JobVersionMismatch,
                       match="Current job has version 2; enforcing version 1"):
        jobs.plan_revert(v, context(), "default", "web", 0, enforce_prior_version=1)
    with pytest.raises(NotFound):
        jobs.plan_revert(view([]), context(), "default", "web", 0)
