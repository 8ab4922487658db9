"""drover.state.jobs.core.job_plan: a dry run with the worker's planner."""

from __future__ import annotations

from state_core_data import context, ready_node, service_job, stored, view

from drover.api.types.v1 import allocation_pb2, job_pb2
from drover.state.core import codec
from drover.state.jobs.core.job_plan import plan_job

C = allocation_pb2


def _job(count: int = 2, image: str = "v1", canary: int = 0, cpu: int = 100) -> job_pb2.Job:
    job = service_job(count=count)
    job.task_groups[0].update.canary = canary
    job.task_groups[0].tasks.add(name="t", driver="sim", config={"image": image},
                                 resources=job_pb2.Resources(cpu=cpu, memory_mb=10))
    return job


def _running(job: job_pb2.Job, n: int) -> list[tuple[str, object, int, int]]:
    out: list[tuple[str, object, int, int]] = []
    for i in range(n):
        a = allocation_pb2.Allocation(
            id=f"a{i}", namespace="default", job_id="web", task_group="g", node_id="n1",
            name=f"web.g[{i}]", job_version=0, desired_status=C.ALLOC_DESIRED_STATUS_RUN,
            client_status=C.ALLOC_CLIENT_STATUS_RUNNING,
            resources=job_pb2.Resources(cpu=100, memory_mb=10))
        a.deployment_status.healthy = True
        out.append((codec.ALLOCATIONS, a, 10 + i, 10 + i))
    return out


def test_a_new_job_places_its_count_and_is_added() -> None:
    resp = plan_job(view([(codec.NODES, ready_node(datacenter="dc1"), 1, 1)]), context(),
                    _job(count=3))
    assert resp.diff_type == "Added" and resp.job_modify_index == 0 and resp.version == 0
    assert resp.desired_updates["g"].place == 3 and not resp.failed_placements
    assert any(d.path == "task_groups[g].count" and d.new == "3" for d in resp.diff)


def test_a_job_that_does_not_fit_says_which_dimension() -> None:
    resp = plan_job(view([(codec.NODES, ready_node(datacenter="dc1"), 1, 1)]), context(),
                    _job(cpu=5000))
    failed = resp.failed_placements["g"]
    assert failed.count == 2 and failed.reasons == ['Dimension "cpu" exhausted on 1 nodes']


def test_no_eligible_node_is_said_so() -> None:
    resp = plan_job(view([]), context(), _job())
    assert "no eligible node" in resp.failed_placements["g"].reasons[0]


def _current(job: job_pb2.Job) -> list[tuple[str, object, int, int]]:
    cur = stored(job, 0)
    cur.job_modify_index = 5
    return [(codec.JOBS, cur, 5, 5), (codec.JOB_VERSIONS, cur, 5, 5),
            (codec.NODES, ready_node(datacenter="dc1"), 1, 1), *_running(job, 3)]


def test_an_unchanged_spec_changes_nothing() -> None:
    job = _job(count=3)
    resp = plan_job(view(_current(job)), context(), _job(count=3))
    assert resp.diff_type == "None" and resp.job_modify_index == 5
    assert resp.desired_updates["g"].ignore == 3 and resp.desired_updates["g"].place == 0


def test_a_destructive_update_rolls_max_parallel_first() -> None:
    resp = plan_job(view(_current(_job(count=3))), context(), _job(count=3, image="v2"))
    u = resp.desired_updates["g"]
    assert resp.diff_type == "Edited" and resp.version == 1
    assert (u.destructive_update, u.ignore, u.place, u.stop) == (1, 2, 0, 0)
    (d,) = resp.diff
    assert (d.type, d.path, d.old, d.new) == ("Edited", "task_groups[g].tasks[t].config.image",
                                              "v1", "v2")


def test_a_canary_update_places_the_canary_only() -> None:
    resp = plan_job(view(_current(_job(count=3, canary=1))), context(),
                    _job(count=3, image="v2", canary=1))
    u = resp.desired_updates["g"]
    assert (u.canary, u.destructive_update, u.ignore) == (1, 0, 3)


def test_an_in_place_update_and_a_scale_down() -> None:
    job = _job(count=3)
    new = _job(count=2)
    new.meta["team"] = "x"  # a job-level change: tasks unchanged, so in place
    resp = plan_job(view(_current(job)), context(), new)
    u = resp.desired_updates["g"]
    assert (u.stop, u.in_place_update) == (1, 2)
