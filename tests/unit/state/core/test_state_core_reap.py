"""Purge and GC pages as plans: bounded pages, the job in the last, each
object compared on the revision it was chosen at."""

from __future__ import annotations

import pytest
from state_core_data import KEYS, key, view

from drover.api.types.v1 import deployment_pb2, evaluation_pb2, job_pb2
from drover.coord.kv import Compare, Delete
from drover.errors import NotFound
from drover.state.core import codec
from drover.state.core.reap import PAGE, Doomed, plan_delete_page, plan_purge_page


def owned(n_evals: int) -> list[tuple[str, object, int, int]]:
    data: list[tuple[str, object, int, int]] = [
        (codec.JOBS, job_pb2.Job(id="j", namespace="default"), 1, 2),
        (codec.DEPLOYMENTS, deployment_pb2.Deployment(id="d", namespace="default",
                                                      job_id="j"), 3, 3),
        # the same job id in another namespace is not the job's
        (codec.EVALUATIONS, evaluation_pb2.Evaluation(id="x", namespace="other",
                                                      job_id="j"), 4, 4),
    ]
    data += [(codec.EVALUATIONS, evaluation_pb2.Evaluation(id=f"e{i:03d}", namespace="default",
                                                           job_id="j"), 10 + i, 10 + i)
             for i in range(n_evals)]
    return data


def test_a_small_purge_is_one_page_with_the_job_compared_and_deleted_last() -> None:
    plan = plan_purge_page(view(owned(2)), KEYS, "default", "j", started=False)
    assert plan.compares == (Compare(key(codec.JOBS, "default", "j"), "mod", 2),
                             Compare(key(codec.DEPLOYMENTS, "default", "d"), "mod", 3),
                             Compare(key(codec.EVALUATIONS, "default", "e000"), "mod", 10),
                             Compare(key(codec.EVALUATIONS, "default", "e001"), "mod", 11))
    assert plan.ops[0] == Delete(key(codec.DEPLOYMENTS, "default", "d"))
    assert plan.ops[-1] == Delete(key(codec.JOBS, "default", "j"))
    done = plan.respond(20)
    assert done.last and done.ops == 5  # 4 deletes + the revision marker
    assert [d.kind for d in done.doomed].count(codec.EVALUATIONS) == 2


def test_a_big_purge_pages_and_leaves_the_job_for_the_last_page() -> None:
    plan = plan_purge_page(view(owned(PAGE + 5)), KEYS, "default", "j", started=False)
    assert len(plan.ops) == PAGE
    assert Delete(key(codec.JOBS, "default", "j")) not in plan.ops
    assert all(c.target == "mod" and b"/jobs/" not in c.key for c in plan.compares)
    assert not plan.respond(9).last


def test_a_purge_of_nothing_is_not_found_first_and_done_later() -> None:
    with pytest.raises(NotFound):
        plan_purge_page(view([]), KEYS, "default", "j", started=False)
    plan = plan_purge_page(view([]), KEYS, "default", "j", started=True)
    assert not plan.writes and plan.respond(7).last


def test_a_gc_page_conflict_is_final() -> None:
    page = [Doomed(codec.EVALUATIONS, "default/e1", 5)]
    plan = plan_delete_page(KEYS, page)
    assert plan.compares == (Compare(key(codec.EVALUATIONS, "default", "e1"), "mod", 5),)
    assert not plan.retry


def test_exactly_a_page_of_children_takes_the_job_along() -> None:
    plan = plan_purge_page(view(owned(PAGE - 1)), KEYS, "default", "j", started=False)
    assert len(plan.ops) == PAGE + 1 and len(plan.compares) == PAGE + 1
    assert plan.ops[-1] == Delete(key(codec.JOBS, "default", "j"))
