"""The web UI's pure parts: words on the pages, filters, the event scope,
SSE framing, form checks, the version diff, the capability cache."""

from __future__ import annotations

from typing import Any

import pytest

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import (
    allocation_pb2,
    deployment_pb2,
    evaluation_pb2,
    job_pb2,
    node_pb2,
)
from drover.filter import FilterCompiler, Schema
from drover.ui import present, queries
from drover.ui.actions import BadForm, number
from drover.ui.capabilities import Capabilities, CapabilityCache, allowed
from drover.ui.errors import http_status
from drover.ui.events import Scope, sse
from drover.ui.job_page import pick_diff

UUID = "0b7e8c7a-3f0e-4b8e-9a43-0d7f3c1c2e11"


def test_ids_are_cut_as_the_cli_cuts_them() -> None:
    assert present.short(UUID) == "0b7e8c7a"
    assert present.short("sim-1000-long-name") == "sim-1000-long-name"  # names stay whole


def test_job_words_and_summary() -> None:
    job = job_pb2.Job(id="web", status=job_pb2.JOB_STATUS_DEAD, stop=True,
                      type=job_pb2.JOB_TYPE_BATCH)
    job.summary["a"].running = 2
    job.summary["b"].running = 1
    job.summary["b"].failed = 4
    assert present.job_status(job) == "dead (stopped)"
    assert present.job_type(job) == "batch"
    assert present.summary(job) == {"queued": 0, "starting": 0, "running": 3, "failed": 4,
                                    "complete": 0, "lost": 0}


def test_deployment_progress_and_promotion() -> None:
    d = deployment_pb2.Deployment(status=deployment_pb2.DEPLOYMENT_STATUS_RUNNING)
    g = d.task_groups["web"]
    g.desired_total, g.desired_canaries, g.healthy_allocs = 4, 1, 1
    g.placed_canaries.append(UUID)
    (row,) = present.group_progress(d)
    assert row["canaries"] == "1/1" and row["promoted"] == "no" and row["percent"] == 25
    assert present.needs_promotion(d)
    g.promoted = True
    assert not present.needs_promotion(d)
    d.status = deployment_pb2.DEPLOYMENT_STATUS_SUCCESSFUL
    assert not present.deployment_active(d) and not present.needs_promotion(None)
    assert present.percent(5, 0) == 0 and present.percent(9, 4) == 100


def test_alloc_health_and_node_drain_words() -> None:
    a = allocation_pb2.Allocation()
    assert present.health(a) == ""
    a.deployment_status.healthy = False
    assert present.health(a) == "unhealthy"
    n = node_pb2.Node(drain=True)
    assert present.drain_text(n, 3) == "draining (3 left)"
    n = node_pb2.Node(last_drain=node_pb2.DrainMetadata(status=node_pb2.DRAIN_STATUS_COMPLETE))
    assert present.drain_text(n, 0) == "complete"
    assert present.drain_text(node_pb2.Node(), 0) == ""
    assert present.eval_status(evaluation_pb2.Evaluation(
        status=evaluation_pb2.EVALUATION_STATUS_BLOCKED)) == "blocked"


def test_links_keep_the_filter_and_drop_empty_fields() -> None:
    assert present.link("/ui/jobs", {"name": "a b", "page": "x"}, page="") == "/ui/jobs?name=a+b"
    assert present.link("/ui/jobs", {"status": ""}) == "/ui/jobs"
    assert present.link("/j", {"a": "1"}, alloc_page="t") == "/j?a=1&alloc_page=t"


@pytest.mark.parametrize(("message", "expression"), [
    (job_pb2.Job, queries.job_filter('we"b\\', "running")),
    (job_pb2.Job, queries.job_filter("", "bogus")),
    (evaluation_pb2.Evaluation, queries.eval_filter("blocked", "web")),
    (node_pb2.Node, queries.node_filter("down")),
    (allocation_pb2.Allocation, queries.node_allocs('n"1')),
    (allocation_pb2.Allocation, queries.job_allocs("web")),
])
def test_filters_compile_on_the_servers_schema(message: Any, expression: str) -> None:
    FilterCompiler(Schema.for_message(message.DESCRIPTOR)).compile(expression)


def test_user_text_stays_a_literal() -> None:
    job = job_pb2.Job(id='a"||true||"')
    f = FilterCompiler(Schema.for_message(job_pb2.Job.DESCRIPTOR))
    assert f.compile(queries.job_filter('a"||true||"')).matches(job)
    assert not f.compile(queries.job_filter('x"||true||"')).matches(job)
    assert queries.job_filter("", "bogus") == ""  # an unknown status is no filter


def _event(topic: int, key: str, **payload: object) -> state_pb2.Event:
    return state_pb2.Event(topic=topic, key=key, **payload)  # type: ignore[arg-type]


def test_a_jobs_page_hears_only_its_jobs_objects() -> None:
    scope = Scope.parse({"topics": "Job,Allocation,Deployment", "job": "web"})
    assert scope.concerns(_event(state_pb2.TOPIC_JOB, "web"))
    assert not scope.concerns(_event(state_pb2.TOPIC_JOB, "api"))
    assert scope.concerns(_event(state_pb2.TOPIC_ALLOCATION, "x",
                                 allocation=allocation_pb2.Allocation(job_id="web")))
    assert not scope.concerns(_event(state_pb2.TOPIC_ALLOCATION, "x",
                                     allocation=allocation_pb2.Allocation(job_id="api")))
    assert not scope.concerns(_event(state_pb2.TOPIC_NODE, "n"))
    assert scope.changed([_event(state_pb2.TOPIC_JOB, "web"),
                          _event(state_pb2.TOPIC_DEPLOYMENT, "d", deployment=deployment_pb2
                                 .Deployment(job_id="web"))]) == ["deployment", "job"]
    req = scope.request(41, 2.5)
    assert req.from_index == 41 and req.heartbeat_interval.ToMilliseconds() == 2500
    assert list(req.topics) == [state_pb2.TOPIC_JOB, state_pb2.TOPIC_ALLOCATION,
                                state_pb2.TOPIC_DEPLOYMENT]
    with pytest.raises(ValueError, match="unknown topic 'Jobs'"):
        Scope.parse({"topics": "Jobs"})


def test_server_sent_events_are_framed() -> None:
    assert sse("change", {"index": 7}, 7) == b'id: 7\nevent: change\ndata: {"index":7}\n\n'
    assert sse("resync", {}) == b"event: resync\ndata: {}\n\n"


def test_form_numbers_are_checked_before_any_call() -> None:
    assert number({"count": " 3 "}, "count") == 3
    for bad, message in (({}, "count is required"), ({"count": "x"}, "whole number"),
                         ({"count": "-1"}, "0 or more")):
        with pytest.raises(BadForm, match=message):
            number(bad, "count")


def test_version_diff_defaults_to_the_latest_two() -> None:
    versions = [job_pb2.Job(id="web", version=v, priority=50 + v) for v in (2, 1, 0)]
    d = pick_diff(versions, "", "")
    assert d is not None and (d["a"], d["b"]) == (1, 2)
    assert d["lines"] == ['+/- priority: 51 => 52']  # the CLI's diff wording
    d = pick_diff(versions, "0", "2")
    assert d is not None and (d["a"], d["b"]) == (0, 2)
    assert pick_diff(versions[:1], "", "") is None


def test_denials_hide_actions_and_other_answers_do_not() -> None:
    assert not allowed("PERMISSION_DENIED") and not allowed("UNAUTHENTICATED")
    assert allowed("INVALID_ARGUMENT") and allowed("NOT_FOUND")
    assert http_status("PERMISSION_DENIED") == 403 and http_status("INTERNAL") == 502


def test_capabilities_are_kept_per_token_for_a_while() -> None:
    now = [100.0]
    cache = CapabilityCache(5.0, clock=lambda: now[0], max_entries=2)
    caps = Capabilities(submit_job=True)
    cache.put("secret", "default", caps)
    assert cache.get("secret", "default") == caps
    assert cache.get("other", "default") is None and cache.get("secret", "prod") is None
    assert "secret" not in CapabilityCache.key("secret", "default")[0]  # hashed
    now[0] += 6
    assert cache.get("secret", "default") is None
    cache.put("a", "x", caps)
    cache.put("b", "x", caps)
    cache.put("c", "x", caps)  # full: the expired ones go first, then all
    assert cache.get("c", "x") == caps
