"""The pure GC rules (Nomad's core scheduler) and the page packing."""

from __future__ import annotations

import pytest

from drover.state.core.gc_rules import (
    AllocView,
    JobView,
    deployment_collectable,
    eval_verdict,
    job_collectable,
    node_collectable,
)
from drover.state.core.reap import PAGE, Doomed, pack

CUT = 1000.0
OLD, NEW = CUT - 1, CUT + 1
STOPPED = AllocView("stop", "complete", OLD)
LIVE = AllocView("run", "running", OLD)


@pytest.mark.parametrize("status", ["complete", "failed", "canceled"])
def test_a_terminal_old_eval_goes_with_its_terminal_allocations(status: str) -> None:
    assert eval_verdict(status, "service", OLD, None, [STOPPED, STOPPED], CUT) == (True, [0, 1])


@pytest.mark.parametrize("status", ["pending", "blocked", ""])
def test_a_live_eval_stays(status: str) -> None:
    assert eval_verdict(status, "service", OLD, None, [], CUT) == (False, [])


def test_a_young_eval_stays_but_its_old_terminal_allocations_go() -> None:
    assert eval_verdict("complete", "service", NEW, None, [STOPPED, LIVE], CUT) == (False, [0])


def test_an_eval_with_a_live_or_young_allocation_stays() -> None:
    young = AllocView("stop", "complete", NEW)
    assert eval_verdict("complete", "service", OLD, None, [STOPPED, LIVE], CUT) == (False, [0])
    assert eval_verdict("complete", "service", OLD, None, [young], CUT) == (False, [])


@pytest.mark.parametrize(("alloc", "terminal"), [
    (AllocView("stop", "running", OLD), True), (AllocView("evict", "running", OLD), True),
    (AllocView("run", "complete", OLD), True), (AllocView("run", "failed", OLD), True),
    (AllocView("run", "lost", OLD), True), (AllocView("run", "pending", OLD), False),
    (AllocView("run", "running", OLD), False),
])
def test_which_allocations_are_terminal(alloc: AllocView, terminal: bool) -> None:
    assert eval_verdict("complete", "service", OLD, None, [alloc], CUT)[0] is terminal


@pytest.mark.parametrize(("job", "goes"), [
    (None, True),  # purged
    (JobView("batch", True, "running", 50), True),  # stopped
    (JobView("batch", False, "dead", 50), True),
    (JobView("batch", False, "running", 50), False),  # alive: its current allocation stays
])
def test_a_batch_eval_keeps_its_live_jobs_current_allocations(job: JobView | None,
                                                              goes: bool) -> None:
    current = AllocView("run", "complete", OLD, create_index=60)
    assert eval_verdict("complete", "batch", OLD, job, [current], CUT) == (
        (True, [0]) if goes else (False, []))
    # A service eval goes whatever its job does.
    assert eval_verdict("complete", "service", OLD, job, [current], CUT) == (True, [0])


def test_a_live_batch_jobs_eval_goes_with_its_older_versions_allocations() -> None:
    job = JobView("batch", False, "running", job_modify_index=50)
    older, current = (AllocView("run", "complete", OLD, create_index=i) for i in (40, 60))
    assert eval_verdict("complete", "batch", OLD, job, [older], CUT) == (True, [0])
    assert eval_verdict("complete", "batch", OLD, job, [older, current], CUT) == (False, [0])
    assert eval_verdict("complete", "batch", NEW, job, [older, current], CUT) == (False, [0])


def test_a_live_batch_jobs_evals_without_allocations_do_not_pile_up() -> None:
    """Registered again and again (each register an evaluation, none placing
    anything new): the terminal, old ones go, else one stays per register."""
    job = JobView("batch", False, "pending", job_modify_index=10_000)
    kept = [i for i in range(1000) if not eval_verdict("complete", "batch", OLD, job, [], CUT)[0]]
    assert kept == []
    assert eval_verdict("pending", "batch", OLD, job, [], CUT)[0] is False
    assert eval_verdict("complete", "batch", NEW, job, [], CUT)[0] is False


@pytest.mark.parametrize(("status", "modified", "referenced", "goes"), [
    ("successful", OLD, False, True), ("failed", OLD, False, True),
    ("cancelled", OLD, False, True), ("running", OLD, False, False),
    ("paused", OLD, False, False), ("successful", NEW, False, False),
    ("successful", OLD, True, False),
])
def test_deployment_rules(status: str, modified: float, referenced: bool, goes: bool) -> None:
    assert deployment_collectable(status, modified, referenced, CUT) is goes


def test_job_rules() -> None:
    batch, service = JobView("batch", False, "pending"), JobView("service", False, "running")
    stopped = JobView("service", True, "running")
    assert job_collectable(batch, OLD, ["complete"], [STOPPED], CUT)
    assert job_collectable(stopped, OLD, ["complete", "failed"], [], CUT)
    assert not job_collectable(service, OLD, ["complete"], [], CUT)  # live service job
    assert not job_collectable(batch, NEW, ["complete"], [], CUT)  # too young
    assert not job_collectable(batch, OLD, ["complete", "pending"], [], CUT)
    assert not job_collectable(stopped, OLD, ["complete"], [LIVE], CUT)


@pytest.mark.parametrize(("status", "changed", "live", "goes"), [
    ("down", OLD, 0, True), ("down", NEW, 0, False), ("down", OLD, 1, False),
    ("ready", OLD, 0, False), ("disconnected", OLD, 0, False),
])
def test_node_rules(status: str, changed: float, live: int, goes: bool) -> None:
    assert node_collectable(status, changed, live, CUT) is goes


def _group(name: str, n: int) -> list[Doomed]:
    return [Doomed("allocations", f"default/{name}-{i}", 1) for i in range(n - 1)] + [
        Doomed("evaluations", f"default/{name}", 1)]


def test_pack_keeps_groups_whole_and_pages_bounded() -> None:
    groups = [_group(f"e{i}", 3) for i in range(100)]  # 300 objects
    pages = list(pack(groups))
    assert all(len(p) <= PAGE for p in pages)
    assert [len(p) for p in pages] == [120, 120, 60]
    assert [d for p in pages for d in p] == [d for g in groups for d in g]


def test_pack_splits_an_oversized_group_with_its_owner_last() -> None:
    big = _group("big", 300)
    pages = list(pack([_group("a", 2), big, _group("b", 2)]))
    assert all(len(p) <= PAGE for p in pages)
    assert pages[0] == _group("a", 2)
    assert pages[1] == big[:120] and pages[2] == big[120:240]
    assert pages[3] == big[240:] + _group("b", 2)
    assert pages[3][59] == Doomed("evaluations", "default/big", 1)


def test_pack_of_nothing_is_nothing() -> None:
    assert list(pack([])) == []
