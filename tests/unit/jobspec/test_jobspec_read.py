"""A spec mistake is one line, ``FILE:LINE: what is wrong``, with a
did-you-mean and the valid values where there are some (item 11 of issue 40)."""

from __future__ import annotations

from pathlib import Path

import pytest

from drover.api.types.v1 import job_pb2
from drover.jobspec.read import SpecError, read_job

GOOD = "id: web\ntype: service\ndatacenters: [dc1]\ntask_groups:\n  - name: web\n    count: 3\n"


def _error(tmp_path: Path, text: str, name: str = "web.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(SpecError) as err:
        read_job(str(path))
    line = str(err.value)
    assert "\n" not in line and line.startswith(f"{path}:"), line
    return line.removeprefix(f"{path}:")


def test_a_good_spec_reads(tmp_path: Path) -> None:
    (tmp_path / "web.yaml").write_text(GOOD)
    job = read_job(str(tmp_path / "web.yaml"))
    assert job.type == job_pb2.JOB_TYPE_SERVICE and job.task_groups[0].count == 3


def test_an_unknown_field_names_its_line_and_the_likely_one(tmp_path: Path) -> None:
    text = GOOD.replace("count: 3", "cout: 3")
    assert _error(tmp_path, text) == '6: unknown field "cout" in task group (did you mean "count"?)'
    assert _error(tmp_path, "id: web\npriorty: 50\n") == \
        '2: unknown field "priorty" in job (did you mean "priority"?)'


def test_a_bad_enum_lists_the_valid_values(tmp_path: Path) -> None:
    assert _error(tmp_path, "id: web\ntype: servic\n") == (
        '2: type: "servic" is not valid: one of service, batch, system (did you mean "service"?)')


def test_a_yaml_error_names_the_file_and_line(tmp_path: Path) -> None:
    got = _error(tmp_path, "id: web\ntype: service\n  foo: : bar\n")
    assert got.startswith("3: could not parse the file as YAML:") and "unicode" not in got


def test_json_errors_and_wrong_kinds(tmp_path: Path) -> None:
    assert _error(tmp_path, '{"id": "web",\n "x": }', "web.json").startswith(
        "2: could not parse the file as JSON")
    assert _error(tmp_path, '{"id": "web",\n "taskGroups": [{"count": "three"}]}',
                  "web.json") == "2: count: expected a whole number, got text 'three'"
    assert _error(tmp_path, "id: web\ntask_groups:\n  - update: {min_healthy_time: 5x}\n") \
        .startswith("3: min_healthy_time: not a duration")


def test_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="no such file"):
        read_job(str(tmp_path / "nope.yaml"))
