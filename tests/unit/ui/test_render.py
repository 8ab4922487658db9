"""The pages' HTML from real messages: what is shown, and which actions are
offered for which capabilities (the server judges; these are its answers)."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from drover.api.broker.v1 import broker_pb2
from drover.api.types.v1 import allocation_pb2, deployment_pb2, job_pb2, node_pb2
from drover.ui.app import create_app
from drover.ui.capabilities import Capabilities
from drover.ui.config import UiConfig
from drover.ui.job_page import pick_diff
from drover.ui.present import group_progress, needs_promotion, summary
from drover.ui.render import environment

CANARY = "0b7e8c7a-3f0e-4b8e-9a43-0d7f3c1c2e11"
WRITE = Capabilities(True, True, True, "ops")
READ = Capabilities(False, False, False, "viewer")


def _job_context() -> dict[str, Any]:
    job = job_pb2.Job(id="web", namespace="default", version=1, status=job_pb2.JOB_STATUS_RUNNING,
                      task_groups=[job_pb2.TaskGroup(name="frontend", count=3)])
    d = deployment_pb2.Deployment(id="d" * 8 + CANARY[8:], namespace="default", job_id="web",
                                  status=deployment_pb2.DEPLOYMENT_STATUS_RUNNING)
    g = d.task_groups["frontend"]
    g.desired_total, g.desired_canaries = 3, 1
    g.placed_canaries.append(CANARY)
    canary = allocation_pb2.Allocation(id=CANARY, job_id="web", task_group="frontend",
                                       node_id="sim-0", job_version=1)
    canary.deployment_status.canary = True
    versions = [job_pb2.Job(id="web", version=v) for v in (1, 0)]
    return {"job": job, "summary": summary(job), "versions": versions,
            "diff": pick_diff(versions, "", ""), "deployment": d, "groups": group_progress(d),
            "needs_promotion": needs_promotion(d), "allocations": [canary],
            "next_page": "tok", "index": 42, "form": {"alloc_page": "", "a": "", "b": ""},
            "namespace": "default", "group_counts": {"frontend": 3}}


def _render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)


def test_a_job_page_shows_its_canary_and_offers_promote_to_a_writer() -> None:
    page = _render("job.html", caps=WRITE, **_job_context())
    assert 'data-index="42"' in page
    assert "requires promotion" in page and 'data-action="promote"' in page
    assert CANARY in page and ">canary<" in page and "1/1" in page
    assert 'data-action="scale"' in page and 'data-action="revert"' in page
    assert "alloc_page=tok" in page  # the next page of allocations, never all


def test_a_reader_sees_the_same_job_without_actions() -> None:
    page = _render("job.html", caps=READ, **_job_context())
    assert "requires promotion" in page and CANARY in page
    assert "data-action" not in page


def test_nodes_offer_drain_and_eligibility_only_with_node_write() -> None:
    node = node_pb2.Node(id="sim-0", name="sim-0", status=node_pb2.NODE_STATUS_READY,
                         scheduling_eligibility=node_pb2.NODE_SCHEDULING_ELIGIBILITY_ELIGIBLE)
    ctx = {"nodes": [{"node": node, "allocs": "2", "drain": ""}], "next_page": "",
           "index": 1, "form": {"status": "", "page": ""}, "statuses": ()}
    page = _render("nodes.html", caps=WRITE, **ctx)
    assert 'data-action="drain"' in page and 'data-action="ineligible"' in page
    assert "data-action" not in _render("nodes.html", caps=READ, **ctx)


def test_evaluations_show_the_brokers_counts_or_why_not() -> None:
    ctx = {"evaluations": [], "next_page": "", "index": 1, "namespace": "default",
           "form": {"status": "", "job": "", "page": ""}, "statuses": ()}
    stats = broker_pb2.BrokerStats(enabled=True, total_blocked=2)
    page = _render("evaluations.html", caps=READ, broker={
        "error": "", "stats": stats,
        "rows": [{"scheduler": "service", "ready": 1, "unacked": 0, "blocked": "2"}]},
        **ctx)
    assert 'data-scheduler="service"' in page and "No evaluations" in page
    page = _render("evaluations.html", caps=READ, broker={"error": "denied (X)"}, **ctx)
    assert "denied (X)" in page


def test_user_text_is_escaped() -> None:
    job = job_pb2.Job(id="<script>x</script>", namespace="default")
    page = _render("jobs.html", caps=READ, jobs=[{"job": job, "summary": summary(job)}],
                   next_page="", index=1, form={"name": "<b>", "status": "", "page": ""},
                   namespace="default", statuses=(), summary_states=())
    assert "<script>x" not in page and "&lt;script&gt;" in page and "<b>" not in page


@pytest.fixture
async def client() -> Any:
    # No drover behind it: these requests are answered by the UI alone.
    app = create_app(UiConfig(address="127.0.0.1:9"))
    async with TestClient(TestServer(app)) as c:
        yield c


async def test_shells_and_assets_are_served_without_a_token(client: Any) -> None:
    resp = await client.get("/ui/jobs/default/web?alloc_page=t")
    text = await resp.text()
    assert resp.status == 200 and 'hx-get="/ui/f/jobs/default/web?alloc_page=t"' in text
    assert 'data-topics="Job,Deployment,Allocation"' in text and 'data-job="web"' in text
    for asset in ("htmx-2.0.11.min.js", "ui.js", "ui.css"):
        assert (await client.get(f"/ui/static/{asset}")).status == 200
    assert (await client.get("/healthz")).status == 200


async def test_actions_need_the_uis_own_page_and_a_well_formed_token(client: Any) -> None:
    resp = await client.post("/ui/actions/promote", data={"deployment": "x"})
    assert resp.status == 403 and "HX-Request" in await resp.text()  # a cross-site form
    resp = await client.get("/ui/f/jobs", headers={"Authorization": "Basic abc"})
    assert resp.status == 401 and "Bearer" in await resp.text()
    resp = await client.post("/ui/actions/nope", headers={"HX-Request": "true"})
    assert resp.status == 404 and "promote" in await resp.text()
    resp = await client.post("/ui/actions/scale", data={"job": "web", "group": "g",
                                                        "count": "many"},
                             headers={"HX-Request": "true"})
    assert resp.status == 400 and "whole number" in await resp.text()
    resp = await client.get("/ui/events?topics=Bogus")
    assert resp.status == 400 and "unknown topic" in await resp.text()
