"""`drover job plan`'s output and exit code, as Nomad's."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from drover.api.state.v1 import state_pb2
from drover.cli.job_versions import plan_exit_code, plan_text
from drover.cli.main import cli


def _resp(**kw: object) -> state_pb2.PlanJobResponse:
    return state_pb2.PlanJobResponse(**kw)  # type: ignore[arg-type]


def test_no_change_exits_0_and_a_create_or_destroy_exits_1() -> None:
    same = _resp(diff_type="None")
    same.desired_updates["g"].ignore = 3
    assert plan_exit_code(same) == 0
    edit = _resp(diff_type="Edited")
    edit.desired_updates["g"].in_place_update = 3
    assert plan_exit_code(edit) == 0  # in place: nothing created or destroyed
    edit.desired_updates["g"].destructive_update = 1
    assert plan_exit_code(edit) == 1
    unfit = _resp(diff_type="Added")
    unfit.failed_placements["g"].count = 1
    assert plan_exit_code(unfit) == 1


def test_the_text_has_the_diff_the_groups_the_dry_run_and_the_check_index_hint() -> None:
    resp = _resp(diff_type="Edited", job_modify_index=42)
    resp.diff.add(type="Edited", path="task_groups[g].count", old="2", new="3")
    resp.desired_updates["g"].place = 1
    resp.desired_updates["g"].ignore = 2
    resp.failed_placements["g"].count = 1
    resp.failed_placements["g"].reasons.append('Dimension "cpu" exhausted on 3 nodes')
    text = plan_text(resp, "web", "web.yaml")
    assert text.splitlines()[0] == '+/- Job: "web"'
    assert "+/- task_groups[g].count: 2 => 3" in text  # numbers as the tables show them
    assert 'Task Group: "g" (1 create, 2 ignore)' in text
    assert "- WARNING: Failed to place all allocations." in text
    assert 'Task Group "g" (failed to place 1 allocation(s)):' in text
    assert "Job Modify Index: 42" in text
    assert "drover job run --check-index 42 web.yaml" in text


@pytest.mark.parametrize(("command", "code"), [("plan", 255), ("run", 1), ("validate", 1)])
def test_a_bad_spec_is_one_line_and_nomads_exit_code(tmp_path: Path, command: str,
                                                     code: int) -> None:
    """Nomad: 255 for an invalid spec on plan, 1 on run; no usage banner, the
    file and line first (no server is asked: the address is never dialled)."""
    spec = tmp_path / "web.yaml"
    spec.write_text("id: web\ntask_groups:\n  - name: web\n    cout: 3\n")
    out = CliRunner().invoke(cli, ["job", command, str(spec), "--address", "127.0.0.1:1"])
    assert out.exit_code == code, out.output
    assert "Usage:" not in out.output and "Traceback" not in out.output
    assert out.output.strip() == (f'Error: {spec}:4: unknown field "cout" in task group '
                                  '(did you mean "count"?)')
    missing = CliRunner().invoke(cli, ["job", command, str(tmp_path / "nope.yaml")])
    assert missing.exit_code == code and "no such file" in missing.output
    assert "Usage:" not in missing.output
