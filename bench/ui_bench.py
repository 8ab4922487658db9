"""Web UI benchmark: a 10,000-allocation job's page on a 1,000-node cluster.

    .venv/bin/python bench/ui_bench.py                  # 1,000 nodes, 10,000 allocations
    .venv/bin/python bench/ui_bench.py --nodes 100 --allocs 1000 --json

Starts `drover dev --nodes N` (simulated nodes, one worker, the web UI) on
free ports and registers one service job of ``--allocs`` allocations with the
eval broker paused; its allocations are written directly (UpsertAllocations,
running, spread over the nodes, in calls of the write cap): this measures
the UI on a big job, not the scheduler placing it. Then, in headless
chromium (Debian's, driven by Playwright):

* **first page load**: navigation to the job's page until its first page
  of allocations is in the document (the job, its deployment, one page of its
  allocations), ``--loads`` times; and the content request alone, timed by
  the browser (``fetch`` of the fragment with the page's headers), with its
  size: a page of rows, never the job's 10,000 allocations;
* **event to screen**: with the page open and live, the job is changed
  over gRPC (ScaleJob: a new version) and the time from the call until the
  page shows the new version is taken in the page's own clock (a
  MutationObserver), ``--probes`` times. It covers the write, the event
  stream through the proxy, the server-sent event, the re-fetch and the swap.

Printed: a table (or one JSON object with ``--json``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))  # the browser tests' launcher: same browser, same flags

from ui_browser import browser, open_page  # noqa: E402

from drover.api.state.v1 import state_pb2, state_pb2_grpc  # noqa: E402
from drover.api.types.v1 import allocation_pb2, job_pb2  # noqa: E402
from drover.dev.ports import wait_for_port  # noqa: E402
from drover.dev.supervisor import DevLayout, free_layout  # noqa: E402
from drover.rpc.channels import channel  # noqa: E402

SPEC = """
id: big
type: service
datacenters: [dc1]
task_groups:
  - name: g
    count: {count}
    update: {{max_parallel: 1000, min_healthy_time: 0s, healthy_deadline: 300s,
              progress_deadline: 600s}}
    tasks:
      - name: t
        driver: sim
        resources: {{cpu: 20, memory_mb: 32}}
"""


#: Allocations per UpsertAllocations call: with the usage record of each node
#: it touches, under `drover dev`'s write cap (1,023 objects).
WRITE_BATCH = 500


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def _summary(xs: list[float]) -> dict[str, float]:
    return {"n": len(xs), "p50_ms": round(statistics.median(xs), 1),
            "p99_ms": round(_pct(xs, 0.99), 1), "max_ms": round(max(xs), 1)}


async def ready_nodes(stub: Any) -> int:
    n, token = 0, ""
    while True:
        resp = await stub.ListNodes(state_pb2.ListNodesRequest(
            filter='status == "ready"', page_size=1000, page_token=token), timeout=30)
        n += len(resp.nodes)
        token = resp.next_page_token
        if not token:
            return n


async def place(stub: Any, nodes: int, allocs: int) -> None:
    """The job's allocations, running, round-robin over the simulated nodes."""
    job = (await stub.GetJob(state_pb2.GetJobRequest(namespace="default", id="big"),
                             timeout=30)).job
    batch: list[allocation_pb2.Allocation] = []
    for i in range(allocs):
        batch.append(allocation_pb2.Allocation(
            id=str(uuid.uuid4()), namespace="default", name=f"big.g[{i}]", job_id="big",
            job_version=job.version, task_group="g", node_id=f"sim-{i % nodes}",
            desired_status=allocation_pb2.ALLOC_DESIRED_STATUS_RUN,
            client_status=allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING,
            resources=job_pb2.Resources(cpu=20, memory_mb=32)))
        if len(batch) == WRITE_BATCH or i == allocs - 1:
            await stub.UpsertAllocations(state_pb2.UpsertAllocationsRequest(
                allocations=batch), timeout=60)
            batch = []


async def measure(lay: DevLayout, nodes: int, allocs: int, loads: int, probes: int,
                  log: Any) -> dict[str, Any]:
    ui = f"http://{lay.host}:{lay.ui}"
    async with channel(lay.address("proxy")) as ch:
        stub = state_pb2_grpc.StateServiceStub(ch)
        deadline = time.monotonic() + 300
        while (ready := await ready_nodes(stub)) < nodes:
            if time.monotonic() > deadline:
                raise SystemExit(f"only {ready} of {nodes} nodes ready after 300 s")
            await asyncio.sleep(1)
        started = time.monotonic()
        await place(stub, nodes, allocs)
        written_s = time.monotonic() - started
        print(f"# {allocs} allocations written ({written_s:.0f} s)", file=log)
        url = f"{ui}/ui/jobs/default/big"
        async with browser() as ctx:
            load_ms: list[float] = []
            for _ in range(loads):
                page = await ctx.new_page()
                t0 = time.perf_counter()
                await page.goto(url)
                await page.wait_for_selector("#allocations tr[data-alloc]", state="attached")
                load_ms.append((time.perf_counter() - t0) * 1000)
                await page.close()
            page = await open_page(ctx, url, "")
            rows = await page.locator("#allocations tr[data-alloc]").count()
            fetches = [await page.evaluate(
                """async () => { const t = performance.now();
                     const r = await fetch('/ui/f/jobs/default/big');
                     const b = await r.text(); return [performance.now() - t, b.length]; }""")
                for _ in range(loads)]
            await page.evaluate("""() => {
                const el = document.getElementById('content');
                window.seen = {};
                new MutationObserver(() => {
                  const v = document.getElementById('job-version');
                  if (v) { const n = parseInt(v.textContent); if (!(n in window.seen))
                    window.seen[n] = performance.now(); }
                }).observe(el, {childList: true, subtree: true, characterData: true});
            }""")
            event_ms: list[float] = []
            for i in range(probes):
                count = allocs + i + 1
                t0 = await page.evaluate("performance.now()")
                resp = await stub.ScaleJob(state_pb2.ScaleJobRequest(
                    namespace="default", id="big", group="g", count=count), timeout=30)
                await page.wait_for_function(f"window.seen[{resp.version}] !== undefined",
                                             timeout=30_000)
                event_ms.append(await page.evaluate(f"window.seen[{resp.version}]") - t0)
                await asyncio.sleep(0.5)
    return {"nodes": None, "allocations": allocs, "written_s": round(written_s, 1),
            "rows_on_first_page": rows,
            "first_page_load": _summary(load_ms),
            "content_request": {**_summary([f[0] for f in fetches]),
                                "bytes": int(statistics.median(f[1] for f in fetches))},
            "event_to_screen": _summary(event_ms)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--allocs", type=int, default=10_000)
    ap.add_argument("--loads", type=int, default=5)
    ap.add_argument("--probes", type=int, default=10)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    offset, lay = free_layout()
    tmp = Path(tempfile.mkdtemp(prefix="drover-ui-bench-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("DROVER_")}
    log = (tmp / "dev.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "drover.cli.main", "dev", "--nodes", str(args.nodes),
         "--port-offset", str(offset)], stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        if not wait_for_port(lay.host, lay.ui, 180):
            raise SystemExit(f"drover dev did not start; see {tmp / 'dev.log'}")
        subprocess.run([sys.executable, "-m", "drover.cli.main", "operator", "scheduler",
                        "pause", "--address", lay.address("proxy")], check=True, env=env,
                       capture_output=True, timeout=120)
        spec = tmp / "big.yaml"
        spec.write_text(SPEC.format(count=args.allocs))
        subprocess.run([sys.executable, "-m", "drover.cli.main", "job", "run", "--detach",
                        str(spec), "--address", lay.address("proxy")], check=True, env=env,
                       capture_output=True, timeout=120)
        result = asyncio.run(measure(lay, args.nodes, args.allocs, args.loads, args.probes,
                                     sys.stderr))
        result["nodes"] = args.nodes
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        log.close()
    if args.json:
        print(json.dumps(result))
        return
    print(f"web UI, a job of {result['allocations']} allocations on {args.nodes} simulated "
          f"nodes (written in {result['written_s']} s)")
    print(f"{'measure':<34}{'n':>4}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}")
    for name, key in (("first page load (navigation)", "first_page_load"),
                      ("content request (one page)", "content_request"),
                      ("event to screen", "event_to_screen")):
        r = result[key]
        print(f"{name:<34}{r['n']:>4}{r['p50_ms']:>10}{r['p99_ms']:>10}{r['max_ms']:>10}")
    print(f"first page: {result['rows_on_first_page']} allocation rows, "
          f"{result['content_request']['bytes']} bytes of HTML")


if __name__ == "__main__":
    main()
