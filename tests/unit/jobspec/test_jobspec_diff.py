"""drover.jobspec.diff: field diffs keyed by name, spec fields only."""

from __future__ import annotations

from drover.api.types.v1 import job_pb2
from drover.jobspec import diff


def _job(image: str = "web:1", count: int = 2, **kw: object) -> job_pb2.Job:
    job = job_pb2.Job(id="web", datacenters=["dc1"], **kw)  # type: ignore[arg-type]
    tg = job.task_groups.add(name="g", count=count)
    tg.tasks.add(name="t", driver="sim", config={"image": image})
    return job


def test_an_edited_field_is_named_by_group_and_task_name() -> None:
    (d,) = diff.diff(_job("web:1"), _job("web:2"))
    assert (d.type, d.path, d.old, d.new) == ("Edited", "task_groups[g].tasks[t].config.image",
                                              "web:1", "web:2")
    assert d.line() == '+/- task_groups[g].tasks[t].config.image: "web:1" => "web:2"'


def test_added_and_deleted_fields() -> None:
    new = _job(meta={"team": "a"})
    old = _job(priority=70)
    got = {(d.type, d.path) for d in diff.diff(old, new)}
    assert got == {("Added", "meta.team"), ("Deleted", "priority")}


def test_status_version_and_summary_are_no_spec() -> None:
    a, b = _job(), _job(version=3, status=job_pb2.JOB_STATUS_RUNNING, modify_index=9)
    b.summary["g"].running = 2
    assert diff.diff(a, b) == [] and diff.diff_type(a, b) == "None"


def test_reordering_groups_changes_nothing_and_diff_types() -> None:
    a = _job()
    a.task_groups.add(name="h", count=1)
    b = job_pb2.Job()
    b.CopyFrom(a)
    del b.task_groups[:]
    b.task_groups.extend([a.task_groups[1], a.task_groups[0]])
    assert diff.diff(a, b) == []
    assert diff.diff_type(None, a) == "Added" and diff.diff_type(a, None) == "Deleted"
    assert diff.diff_type(a, _job(count=5)) == "Edited"


def test_diff_values_read_as_the_tables_show_them() -> None:
    """``service``, not JOB_TYPE_SERVICE; numbers bare, text quoted."""
    from drover.api.types.v1 import job_pb2
    from drover.jobspec.diff import diff

    old = job_pb2.Job(id="web", type=job_pb2.JOB_TYPE_BATCH, priority=50)
    new = job_pb2.Job(id="web", type=job_pb2.JOB_TYPE_SERVICE, priority=60)
    lines = [d.line() for d in diff(old, new)]
    assert lines == ["+/- priority: 50 => 60", '+/- type: "batch" => "service"']
