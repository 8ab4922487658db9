"""The web UI in a real browser (headless chromium) against a real `drover
dev --acl`: each page shows the cluster's objects; a canary rollout started
from the CLI shows up on the job page live and Promote there completes it;
a read-only token sees no Promote button and is denied if it calls the
action anyway; a drain started from the UI moves the allocations; a dropped
event stream reconnects from its last index.

With ``DROVER_UI_SCREENSHOTS=<dir>`` the pages are saved there as PNGs
(``docs/ui/`` holds the ones the README shows).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Page
from ui_browser import browser, chromium, open_page

from drover.dev.ports import wait_for_port
from drover.dev.supervisor import free_layout

# A developer's machine without chromium skips these (`make test-slow` installs
# it through `make browser`); CI never does: there a missing browser fails.
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(chromium() is None and not os.environ.get("CI"),
                                 reason="no chromium: run `make browser` (CI fails instead)")]

SPEC = """
id: web
type: service
datacenters: [dc1]
task_groups:
  - name: frontend
    count: 3
    update:
      max_parallel: 1
      canary: 1
      min_healthy_time: 1s
      healthy_deadline: 20s
      progress_deadline: 60s
    migrate: {max_parallel: 1, min_healthy_time: 1s, healthy_deadline: 30s}
    tasks:
      - name: server
        driver: sim
        config: {image: "web:IMAGE"}
        resources: {cpu: 200, memory_mb: 128}
"""
READ_ONLY = "namespace:\n  '*':\n    policy: read\nnode:\n  policy: read\n"
SHOTS = os.environ.get("DROVER_UI_SCREENSHOTS", "")
#: The suite's log, whose warnings a failed wait prints (CI keeps nothing else).
DEV_LOG: list[Path] = []


def _warnings(last: int = 25) -> str:
    if not DEV_LOG or not DEV_LOG[0].exists():
        return ""
    lines = [ln for ln in DEV_LOG[0].read_text(errors="replace").splitlines()
             if " WARNING " in ln or " ERROR " in ln]
    return "\n".join(["", "drover dev's last warnings:", *lines[-last:]])


class Suite:
    def __init__(self, proxy: str, ui: str, management: str, read_only: str,
                 tmp: Path) -> None:
        self.proxy, self.ui, self.management, self.read_only = proxy, ui, management, read_only
        self.tmp = tmp

    def cli(self, *args: str, token: str = "", timeout: float = 60) -> Any:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DROVER_")}
        env.update(DROVER_ADDR=self.proxy, DROVER_TOKEN=token or self.management)
        out = subprocess.run([sys.executable, "-m", "drover.cli.main", *args, "--json"],
                             env=env, capture_output=True, text=True, timeout=timeout)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout) if out.stdout.strip().startswith(("{", "[")) else None

    def run_job(self, image: str) -> None:
        spec = self.tmp / f"web-{image}.yaml"
        spec.write_text(SPEC.replace("IMAGE", image))
        self.cli("job", "run", "--detach", str(spec))

    def allocs(self, *filter_: str) -> list[dict[str, Any]]:
        args = ("alloc", "list", "--filter", filter_[0]) if filter_ else ("alloc", "list")
        listed = self.cli(*args)
        return listed if isinstance(listed, list) else []


def _until(check: Any, within: float, what: str) -> Any:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.25)
    raise AssertionError(f"not within {within}s: {what}{_warnings()}")


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Suite]:
    tmp = tmp_path_factory.mktemp("ui")
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
    offset, lay = free_layout()
    log_path = tmp / "dev.log"
    DEV_LOG[:] = [log_path]
    env = {k: v for k, v in os.environ.items() if not k.startswith("DROVER_")}
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "drover.cli.main", "dev", "--acl", "--nodes", "3",
             "--port-offset", str(offset), "--data-dir", str(tmp / "data")],
            stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        _until(lambda: "drover is up" in log_path.read_text() or proc.poll() is not None, 120,
               "drover dev up")
        text = log_path.read_text()
        assert "drover is up" in text, text[-3000:]
        assert f"http://{lay.host}:{lay.ui}/ui" in text  # the UI's address is printed
        management = next(line.split("DROVER_TOKEN=", 1)[1].strip()
                          for line in text.splitlines() if "DROVER_TOKEN=" in line)
        assert wait_for_port(lay.host, lay.ui, 30)
        s = Suite(lay.address("proxy"), f"http://{lay.host}:{lay.ui}", management, "", tmp)
        (tmp / "ro.yaml").write_text(READ_ONLY)
        s.cli("acl", "policy", "apply", "viewer", str(tmp / "ro.yaml"))
        s.read_only = s.cli("acl", "token", "create", "--name", "viewer",
                            "--policy", "viewer")["secret_id"]
        _until(lambda: len(s.cli("node", "list") or []) >= 3, 60, "3 nodes")
        s.run_job("1.0")
        _until(lambda: sum(a["client_status"] == "running" for a in s.allocs()) >= 3, 60,
               "3 allocations running")
        yield s
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)


async def _shot(page: Page, name: str) -> None:
    if SHOTS:
        await page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)


async def _text_until(page: Page, selector: str, want: str, within: float = 30) -> str:
    """Poll the DOM (bounded) until ``selector``'s text contains ``want``."""
    deadline = time.monotonic() + within
    text = ""
    while time.monotonic() < deadline:
        loc = page.locator(selector)
        text = await loc.first.inner_text() if await loc.count() else ""
        if want in text:
            return text
        await page.wait_for_timeout(100)
    raise AssertionError(f"{selector} never showed {want!r} in {within}s (last: {text!r})"
                         f"{_warnings()}")


async def test_each_page_shows_the_clusters_objects(suite: Suite) -> None:
    async with browser() as ctx:
        page = await open_page(ctx, f"{suite.ui}/ui/jobs", suite.management)
        row = page.locator("#jobs tr[data-job=web]")
        assert "service" in await row.inner_text() and "running" in await row.inner_text()
        assert "3 running" in await row.inner_text()
        assert "management" in await page.inner_text("#whoami")
        await _shot(page, "jobs")

        page = await open_page(ctx, f"{suite.ui}/ui/jobs/default/web", suite.management)
        allocs = {a["id"] for a in suite.allocs('job_id == "web"')}
        shown = set(await page.locator("#allocations tr[data-alloc]").evaluate_all(
            "rows => rows.map(r => r.dataset.alloc)"))
        assert shown == allocs
        assert await page.locator("#deployment-status").inner_text() == "successful"
        await _shot(page, "job")

        page = await open_page(ctx, f"{suite.ui}/ui/evaluations", suite.management)
        evals = {e["id"] for e in suite.cli("eval", "list")}
        shown = set(await page.locator("#evaluations tr[data-eval]").evaluate_all(
            "rows => rows.map(r => r.dataset.eval)"))
        assert shown and shown <= evals
        assert await page.locator("#broker table").count() == 1
        await _shot(page, "evaluations")

        page = await open_page(ctx, f"{suite.ui}/ui/nodes", suite.management)
        names = set(await page.locator("#nodes tr[data-node]").evaluate_all(
            "rows => rows.map(r => r.dataset.name)"))
        assert names == {"sim-0", "sim-1", "sim-2"}
        await _shot(page, "nodes")


async def test_canary_rollout_shows_live_and_promote_completes_it(suite: Suite) -> None:
    async with browser() as ctx:
        page = await open_page(ctx, f"{suite.ui}/ui/jobs/default/web", suite.management)
        viewer = await open_page(ctx, f"{suite.ui}/ui/jobs/default/web", suite.read_only)
        suite.run_job("2.0")  # from the CLI: version 1, one canary
        # No reload: the page shows the canary from the event stream.
        await _text_until(page, "#deployment-groups .canaries", "1/1")
        canary = await page.locator("#deployment-groups .canary").first.get_attribute("title")
        assert canary and suite.cli("alloc", "status", canary)["deployment_status"]["canary"]
        await _text_until(page, "#needs-promotion", "requires promotion")
        await page.wait_for_selector(f"#allocations tr[data-alloc='{canary}'] .health",
                                     timeout=30_000)
        await _text_until(page, f"#allocations tr[data-alloc='{canary}'] .health", "healthy")
        await _shot(page, "job-canary")

        # The read-only token: the same deployment, no Promote button...
        await _text_until(viewer, "#needs-promotion", "requires promotion")
        assert await viewer.locator("[data-action=promote]").count() == 0
        assert "viewer" in await viewer.inner_text("#whoami")
        # ... and the action called anyway is denied as the CLI words it.
        deployment = await page.locator("[data-action=promote]").get_attribute("hx-vals")
        assert deployment is not None
        status, body = await viewer.evaluate(
            """async (vals) => {
                 const r = await fetch('/ui/actions/promote', {method: 'POST',
                   headers: {'Authorization': 'Bearer ' + sessionStorage.getItem('drover.token'),
                             'HX-Request': 'true'}, body: new URLSearchParams(vals)});
                 return [r.status, await r.text()];
               }""", json.loads(deployment))
        assert status == 403 and "ACL_PERMISSION_DENIED" in body, body
        assert "submit-job" in body

        await page.click("[data-action=promote]")
        await _text_until(page, "#flash", "promoted")
        await _text_until(page, "#deployment-status", "successful", within=90)
        running = [a for a in suite.allocs('job_id == "web" && desired_status == "run"')
                   if a["client_status"] == "running" and str(a["job_version"]) == "1"]
        assert len(running) == 3


async def test_drain_from_the_ui_moves_allocations(suite: Suite) -> None:
    def on(node: str) -> list[dict[str, Any]]:
        return [a for a in suite.allocs(f'node_id == "{node}" && desired_status == "run"')]

    node = _until(lambda: next((n for n in ("sim-0", "sim-1", "sim-2") if on(n)), None), 30,
                  "a node with allocations")
    async with browser() as ctx:
        page = await open_page(ctx, f"{suite.ui}/ui/nodes", suite.management)
        await page.click(f"#nodes tr[data-name={node}] [data-action=drain]")
        await _text_until(page, "#flash", "Drain started")
        await _text_until(page, f"#nodes tr[data-name={node}] .eligibility", "ineligible")
        await _shot(page, "nodes-draining")
        _until(lambda: not on(node), 90, f"{node}'s allocations moved")
        await _text_until(page, f"#nodes tr[data-name={node}] .allocs", "0", within=30)
        await _text_until(page, f"#nodes tr[data-name={node}] .drain", "complete", within=60)
        assert sum(a["client_status"] == "running" and a["desired_status"] == "run"
                   for a in suite.allocs('job_id == "web"')) == 3
        await page.click(f"#nodes tr[data-name={node}] [data-action=eligible]")
        await _text_until(page, f"#nodes tr[data-name={node}] .eligibility", "eligible")


async def test_a_dropped_stream_reconnects_from_its_last_index(suite: Suite) -> None:
    async with browser() as ctx:
        page = await open_page(ctx, f"{suite.ui}/ui/jobs", suite.management)
        urls: list[str] = []
        page.on("request", lambda r: urls.append(r.url) if "/ui/events" in r.url else None)
        before = await page.evaluate("window.droverStream.index")
        assert before > 0
        await page.evaluate("window.droverStream.drop()")
        await page.wait_for_selector("#live[data-state=live]", timeout=10_000)
        suite.cli("job", "scale", "web", "frontend", "4")
        await _text_until(page, "#jobs tr[data-job=web]", "4 running", within=60)
        reconnect = next(u for u in urls)
        assert f"from_index={before}" in reconnect or int(
            reconnect.split("from_index=")[1].split("&")[0]) >= before
