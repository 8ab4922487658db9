"""`drover job plan`'s output and exit code, as Nomad's."""

from __future__ import annotations

from drover.api.state.v1 import state_pb2
from drover.cli.job_versions import plan_exit_code, plan_text


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
