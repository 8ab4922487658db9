"""Queued watcher decisions merged into one write (core.coalesce)."""

from __future__ import annotations

import dataclasses

from drover.api.types.v1 import deployment_pb2, job_pb2
from drover.deployments.config import BatcherConfig
from drover.deployments.core.coalesce import hold_for, merge
from drover.deployments.core.effects import (
    CreateEvaluation,
    Decision,
    DeploymentUpdate,
    GroupUpdate,
    MarkJobStable,
    RescheduleAllocs,
    RevertJob,
    UpdateAllocHealth,
    apply_update,
)

RUNNING = deployment_pb2.DEPLOYMENT_STATUS_RUNNING
DONE = deployment_pb2.DEPLOYMENT_STATUS_SUCCESSFUL


def _group(name: str, placed: int, healthy: int) -> GroupUpdate:
    return GroupUpdate(name=name, placed_allocs=placed, placed_canaries=(), healthy_allocs=healthy,
                       unhealthy_allocs=0, promoted=False, require_progress_by=None)


def _update(status: int, *groups: GroupUpdate, based_on: int = 0) -> DeploymentUpdate:
    return DeploymentUpdate("d1", "default", status, f"s{status}",  # type: ignore[arg-type]
                            groups=groups, based_on_modify_index=based_on)


def _eval() -> CreateEvaluation:
    return CreateEvaluation("default", "j", "d1", 50, "service", 7)


def _applied(*decisions: Decision) -> deployment_pb2.Deployment:
    d = deployment_pb2.Deployment(id="d1", status=RUNNING)
    for dec in decisions:
        if dec.update is not None:
            d = apply_update(d, dec.update)
    return d


def test_merged_write_has_the_end_state_of_writing_both_in_order() -> None:
    a = Decision("d1", update=_update(RUNNING, _group("web", 3, 1), _group("db", 1, 0),
                                      based_on=5), evaluation=_eval())
    b = Decision("d1", update=_update(DONE, _group("web", 4, 4), based_on=6))
    m = merge(a, b)
    assert m is not None
    assert _applied(m) == _applied(a, b)
    assert m.update is not None and m.update.based_on_modify_index == 5
    assert m.evaluation == a.evaluation  # the only follow-up is kept


def test_later_evaluation_and_stable_version_win() -> None:
    e1, e2 = _eval(), _eval()
    m = merge(Decision("d1", evaluation=e1, mark_stable=MarkJobStable("default", "j", 1)),
              Decision("d1", evaluation=e2, mark_stable=MarkJobStable("default", "j", 2)))
    assert m is not None and m.evaluation == e2
    assert m.mark_stable == MarkJobStable("default", "j", 2)


def test_health_is_the_union_and_a_later_verdict_wins() -> None:
    m = merge(Decision("d1", alloc_health=UpdateAllocHealth("default", ("a", "b"), ("c",), 1.0)),
              Decision("d1", alloc_health=UpdateAllocHealth("default", ("c",), ("b", "d"), 2.0)))
    assert m is not None and m.alloc_health is not None
    assert sorted(m.alloc_health.healthy_ids) == ["a", "c"]
    assert sorted(m.alloc_health.unhealthy_ids) == ["b", "d"]
    assert m.alloc_health.timestamp == 2.0


def test_reverts_follow_ups_other_namespaces_and_deployments_are_not_merged() -> None:
    plain = Decision("d1", update=_update(RUNNING))
    revert = Decision("d1", revert=RevertJob("default", "j", 1, 3, job_pb2.Job(id="j")))
    assert merge(plain, revert) is None and merge(revert, plain) is None
    assert merge(plain, Decision("d1", follow_up=_eval())) is None
    marks = Decision("d1", reschedule=RescheduleAllocs("default", ("a1",), _eval()))
    assert merge(plain, marks) is None and merge(marks, plain) is None
    assert merge(Decision("d1", alloc_health=UpdateAllocHealth("a", ("x",), (), 1.0)),
                 Decision("d1", alloc_health=UpdateAllocHealth("b", ("y",), (), 1.0))) is None
    assert merge(plain, Decision("d2", update=_update(RUNNING))) is None


def test_writer_queue_merges_only_decisions_no_caller_waits_on() -> None:
    import asyncio
    import collections

    from drover.deployments.results import _coalesce

    loop = asyncio.new_event_loop()
    try:
        waiter = loop.create_future()
        ds = [Decision("d1", update=_update(RUNNING, _group("web", i, 0))) for i in range(5)]
        queue = collections.deque([(ds[0], None), (ds[1], None), (ds[2], None),
                                   (ds[3], waiter), (ds[4], None)])
        _coalesce(queue)
        assert len(queue) == 3  # 0-2 merged; the steering call's decision stays its own
        head = queue[0][0]
        assert head.update is not None and head.update.groups[0].placed_allocs == 2
        assert queue[1] == (ds[3], waiter)
    finally:
        loop.close()


WINDOWS = BatcherConfig(window=0.25, progress_window=1.0)


def test_counts_wait_the_progress_window_and_a_follow_up_the_batch_window() -> None:
    counts = dataclasses.replace(_update(RUNNING, _group("web", 3, 2)), counts_only=True)
    assert hold_for(Decision("d1", update=counts), WINDOWS) == 1.0
    follow_up = Decision("d1", update=counts, evaluation=_eval(), evaluation_follows_up=True)
    assert hold_for(follow_up, WINDOWS) == 0.25
    assert hold_for(Decision("d1", update=_update(RUNNING, _group("web", 3, 2))), WINDOWS) == 0
    assert hold_for(Decision("d1"), WINDOWS) == 0
    for extra in ({"evaluation": _eval()},
                  {"mark_stable": MarkJobStable("default", "j", 3)},
                  {"alloc_health": UpdateAllocHealth("default", ("a",), (), 1.0)}):
        decision = Decision("d1", update=counts, **extra)  # type: ignore[arg-type]
        assert hold_for(decision, WINDOWS) == 0, extra


def test_what_waits_merged_with_what_cannot_leaves_with_it() -> None:
    counts = dataclasses.replace(_update(RUNNING, _group("web", 3, 2)), counts_only=True)
    more = dataclasses.replace(_update(RUNNING, _group("web", 3, 3)), counts_only=True)
    both = merge(Decision("d1", update=counts), Decision("d1", update=more))
    assert both is not None and hold_for(both, WINDOWS) == 1.0
    follow_up = Decision("d1", update=more, evaluation=_eval(), evaluation_follows_up=True)
    batch = merge(Decision("d1", update=counts), follow_up)
    assert batch is not None and hold_for(batch, WINDOWS) == 0.25
    urgent = merge(follow_up, Decision("d1", update=more, evaluation=_eval()))
    assert urgent is not None and hold_for(urgent, WINDOWS) == 0
    done = merge(Decision("d1", update=counts), Decision("d1", update=_update(DONE)))
    assert done is not None and hold_for(done, WINDOWS) == 0
    assert done.update is not None and done.update.groups == (_group("web", 3, 2),)
