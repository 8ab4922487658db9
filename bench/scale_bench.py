"""Scale benchmark: simulated nodes, many jobs, one new version for all of them.

    .venv/bin/python bench/scale_bench.py                    # 1,000 nodes, 100 jobs x 100
    .venv/bin/python bench/scale_bench.py --nodes 100 --jobs 10 --count 100 --json

Everything runs as real processes, as a user would run them: `drover dev
--nodes 0` (etcd and the four services), `drover sim nodes N` and
`--workers` scheduler workers (`drover worker`). It registers every job
(version 0, all placed at once), waits until all of them are deployed, then
measures the interesting part: `job run` of a new version for every job (a
rolling update, ``--max-parallel`` at a time, ``--min-healthy`` seconds each)
until every deployment is successful.

Reported for the measured phase: wall time, placements per second, CPU
seconds (and % of one core) of the worker(s), the state service, the
deployment watcher and the broker (from /proc), state calls per second (the
state service's own rpc.server.call.duration counts, Prometheus), and etcd
watchers before/after (etcd's own metrics: it must not grow with the number
of deployments). Nomad's C1M (1,000,000 containers on 5,000 hosts in under
5 minutes: about 3,300 placements/s on many servers) is the reference a user
would quote; this runs on one machine, every process sharing its cores.

``--liveness`` measures idle nodes instead (issue 31): `drover sim nodes N`
in one process, no jobs, no worker; once every node is registered and alive
(it heartbeat once) it measures, over ``--idle`` seconds, etcd writes per
second (etcd's revision: every txn is one), heartbeat calls per second (the
state service's UpdateNodeStatus and HeartbeatNodes calls) and the CPU of the state service,
the broker, etcd and the sim process. Target at 10,000 nodes: <= 1 etcd
write per second, state <= 5 % of one core.

    .venv/bin/python bench/scale_bench.py --liveness --nodes 10000 --idle 60 --json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import grpc

from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import deployment_pb2, job_pb2
from drover.dev.ports import wait_for_port
from drover.dev.supervisor import free_layout

CLI = [sys.executable, "-m", "drover.cli.main"]
TICKS = os.sysconf("SC_CLK_TCK")






def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def _service_pids(root: int) -> dict[str, int]:
    """The dev suite's service processes by name (children of ``root``), and etcd."""
    out = {}
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
            ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        if ppid == root and b"serve" in cmd:
            out[cmd[cmd.index(b"serve") + 1].decode()] = int(proc.name)
        elif ppid == root and cmd and cmd[0].endswith(b"etcd"):
            out["etcd"] = int(proc.name)
    return out


def _metric_sum(url: str, pattern: str) -> float:
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    rx = re.compile(pattern)
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if not line.startswith("#") and rx.search(line))


def _by_method(url: str) -> dict[str, list[float]]:
    """The state service's calls per RPC method: [count, seconds] (its own
    ``rpc.server.call.duration`` histogram)."""
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    out: dict[str, list[float]] = {}
    rx = re.compile(r'^rpc_server_call_duration\w*_(count|sum)\{[^}]*rpc_method="(\w+)"')
    for line in text.splitlines():
        m = rx.search(line)
        if m:
            out.setdefault(m.group(2), [0.0, 0.0])[m.group(1) == "sum"] += float(
                line.rsplit(" ", 1)[1])
    return out


def _job(i: int, count: int, image: str, max_parallel: int, min_healthy: float) -> job_pb2.Job:
    j = job_pb2.Job(id=f"bench-{i:04d}", datacenters=["dc1"], type=job_pb2.JOB_TYPE_SERVICE)
    tg = j.task_groups.add(name="app", count=count)
    tg.update.max_parallel = max_parallel
    tg.update.min_healthy_time.FromMilliseconds(int(min_healthy * 1000))
    tg.update.healthy_deadline.FromSeconds(120)
    tg.update.progress_deadline.FromSeconds(600)
    tg.tasks.add(name="t", driver="sim", config={"image": image})
    return j


def _wait_deployed(stub: Any, dep_ids: list[str], within: float) -> float:
    """Until every deployment is successful; the time it took."""
    t0 = time.monotonic()
    pending = set(dep_ids)
    while pending:
        if time.monotonic() - t0 > within:
            raise TimeoutError(f"{len(pending)} deployments not successful in {within}s")
        time.sleep(0.5)
        token = ""
        while True:
            resp = stub.ListDeployments(state_pb2.ListDeploymentsRequest(
                namespace="*", page_size=1000, page_token=token,
                filter='status == "successful" || status == "failed"'), timeout=60)
            for d in resp.deployments:
                if d.id in pending:
                    if d.status == deployment_pb2.DEPLOYMENT_STATUS_FAILED:
                        raise RuntimeError(f"deployment {d.id} failed: {d.status_description}")
                    pending.discard(d.id)
            token = resp.next_page_token
            if not token:
                break
    return time.monotonic() - t0


def _register(stub: Any, args: argparse.Namespace, image: str) -> list[str]:
    return [stub.RegisterJob(state_pb2.RegisterJobRequest(job=_job(
        i, args.count, image, args.max_parallel, args.min_healthy)), timeout=60).deployment_id
        for i in range(args.jobs)]


def run(args: argparse.Namespace) -> dict[str, Any]:
    offset, lay = free_layout()
    log = tempfile.NamedTemporaryFile("w", prefix="scale-bench-", suffix=".log", delete=False)
    dev = subprocess.Popen([*CLI, "dev", "--port-offset", str(offset), "--nodes", "0"],
                           stdout=log, stderr=subprocess.STDOUT)
    children: list[subprocess.Popen[bytes]] = []
    try:
        assert wait_for_port(lay.host, lay.proxy, 60), "dev suite did not start"
        time.sleep(1)
        env = {**os.environ, "DROVER_ADDR": lay.address("proxy")}
        t_nodes = time.monotonic()
        children.append(subprocess.Popen(
            [*CLI, "sim", "nodes", str(args.nodes), "--keep", "--heartbeat", "60"],
            env=env, stdout=log, stderr=subprocess.STDOUT))
        channel = grpc.insecure_channel(lay.address("proxy"))
        stub = state_pb2_grpc.StateServiceStub(channel)
        while True:
            try:
                if len(stub.ListNodes(state_pb2.ListNodesRequest(page_size=args.nodes),
                                      timeout=30).nodes) >= args.nodes:
                    break
            except grpc.RpcError:
                pass  # the suite is still coming up
            time.sleep(0.5)
        register_nodes = time.monotonic() - t_nodes
        # Heartbeats every 60 s keep 1,000 nodes cheap; no TTL to match.
        workers = [subprocess.Popen([*CLI, "worker", "--seed", str(i)],
                                    env=env, stdout=log,
                                    stderr=subprocess.STDOUT) for i in range(args.workers)]
        children.extend(workers)
        first = _wait_deployed(stub, _register(stub, args, "v0"), args.timeout)

        pids = _service_pids(dev.pid)
        etcd_metrics = f"http://{lay.host}:{lay.etcd_metrics}/metrics"
        state_metrics = f"http://{lay.host}:{lay.metrics_port('state')}/metrics"
        watchers_before = _metric_sum(etcd_metrics, r"^etcd_debugging_mvcc_watcher_total")
        calls_before = _metric_sum(state_metrics, r"rpc_server_call_duration.*_count")
        methods_before = _by_method(state_metrics)
        cpu_before = {n: _cpu(p) for n, p in pids.items()}
        cpu_before.update({f"worker-{i}": _cpu(w.pid) for i, w in enumerate(workers)})
        cpu_before["sim"] = _cpu(children[0].pid)
        t0 = time.monotonic()
        deps = _register(stub, args, "v1")
        _wait_deployed(stub, deps, args.timeout)
        wall = time.monotonic() - t0  # from the first `job run` to the last success
        calls = _metric_sum(state_metrics, r"rpc_server_call_duration.*_count") - calls_before
        methods = {m: [int(c - methods_before.get(m, [0, 0])[0]),
                       round(t - methods_before.get(m, [0, 0])[1], 2)]
                   for m, (c, t) in _by_method(state_metrics).items()}
        watchers_after = _metric_sum(etcd_metrics, r"^etcd_debugging_mvcc_watcher_total")
        cpu = {n: round(_cpu(p) - cpu_before[n], 2) for n, p in pids.items()}
        cpu.update({f"worker-{i}": round(_cpu(w.pid) - cpu_before[f"worker-{i}"], 2)
                    for i, w in enumerate(workers)})
        cpu["sim"] = round(_cpu(children[0].pid) - cpu_before["sim"], 2)
        placements = args.jobs * args.count
        return {
            "nodes": args.nodes, "jobs": args.jobs, "count": args.count,
            "max_parallel": args.max_parallel, "min_healthy_s": args.min_healthy,
            "workers": args.workers, "cpus": os.cpu_count(),
            "register_nodes_s": round(register_nodes, 2),
            "initial_deploy_s": round(first, 2),
            "update_all_successful_s": round(wall, 2),
            "placements": placements,
            "placements_per_s": round(placements / wall, 1),
            "cpu_s": cpu,
            "cpu_pct_of_one_core": {n: round(100 * v / wall, 1) for n, v in cpu.items()},
            "state_calls_per_s": round(calls / wall, 1),
            # per method: [calls, seconds spent serving them] in the measured phase
            "state_calls_by_method": {m: v for m, v in sorted(
                methods.items(), key=lambda kv: -kv[1][1]) if v[0]},
            "etcd_watchers_before": watchers_before, "etcd_watchers_after": watchers_after,
            "nomad_c1m_placements_per_s": 3333,
        }
    finally:
        for c in children:
            c.send_signal(signal.SIGTERM)
        for c in children:
            try:
                c.wait(15)
            except subprocess.TimeoutExpired:
                c.kill()
        dev.send_signal(signal.SIGTERM)
        dev.wait(20)
        log.close()


def _alive_nodes(stub: Any, nodes: int) -> int:
    """Nodes that heartbeat at least once (came alive: ``heartbeat_lease``);
    all of them where the code predates the field (every heartbeat writes)."""
    listed = []
    token = ""
    while True:
        resp = stub.ListNodes(state_pb2.ListNodesRequest(page_size=5000, page_token=token),
                              timeout=60)
        listed.extend(resp.nodes)
        token = resp.next_page_token
        if not token:
            break
    if len(listed) < nodes:
        return len(listed)
    if "heartbeat_lease" not in listed[0].DESCRIPTOR.fields_by_name:
        return len(listed)
    return sum(1 for n in listed if getattr(n, "heartbeat_lease", 0))


def liveness(args: argparse.Namespace) -> dict[str, Any]:
    offset, lay = free_layout()
    log = tempfile.NamedTemporaryFile("w", prefix="liveness-bench-", suffix=".log", delete=False)
    dev = subprocess.Popen([*CLI, "dev", "--port-offset", str(offset), "--nodes", "0"],
                           stdout=log, stderr=subprocess.STDOUT)
    sim: subprocess.Popen[bytes] | None = None
    try:
        assert wait_for_port(lay.host, lay.proxy, 60), "dev suite did not start"
        time.sleep(1)
        env = {**os.environ, "DROVER_ADDR": lay.address("proxy")}
        t0 = time.monotonic()
        # The sim's own default heartbeat (3 s) where the server names no TTL.
        sim = subprocess.Popen([*CLI, "sim", "nodes", str(args.nodes), "--keep"],
                               env=env, stdout=log, stderr=subprocess.STDOUT)
        stub = state_pb2_grpc.StateServiceStub(grpc.insecure_channel(lay.address("proxy")))
        registered = 0.0
        while True:
            try:
                alive = _alive_nodes(stub, args.nodes)
            except grpc.RpcError:
                alive = 0  # the suite is still coming up
            if alive >= args.nodes:
                break
            if time.monotonic() - t0 > args.timeout:
                raise TimeoutError(f"{alive} of {args.nodes} nodes alive in {args.timeout}s")
            time.sleep(1.0)
        registered = time.monotonic() - t0
        time.sleep(args.settle)
        pids = _service_pids(dev.pid)
        pids["sim"] = sim.pid
        etcd_metrics = f"http://{lay.host}:{lay.etcd_metrics}/metrics"
        state_metrics = f"http://{lay.host}:{lay.metrics_port('state')}/metrics"
        beats = r"rpc_server_call_duration\w*_count\{[^}]*(UpdateNodeStatus|HeartbeatNodes)"
        rev0 = _metric_sum(etcd_metrics, r"^etcd_debugging_mvcc_current_revision")
        beats0 = _metric_sum(state_metrics, beats)
        cpu0 = {n: _cpu(p) for n, p in pids.items()}
        w0 = time.monotonic()
        time.sleep(args.idle)
        wall = time.monotonic() - w0
        rev1 = _metric_sum(etcd_metrics, r"^etcd_debugging_mvcc_current_revision")
        beats1 = _metric_sum(state_metrics, beats)
        cpu = {n: round(_cpu(p) - cpu0[n], 2) for n, p in pids.items()}
        return {
            "mode": "liveness", "nodes": args.nodes, "cpus": os.cpu_count(),
            "registered_and_alive_s": round(registered, 1), "settle_s": args.settle,
            "idle_s": round(wall, 1),
            "etcd_writes": int(rev1 - rev0),
            "etcd_writes_per_s": round((rev1 - rev0) / wall, 2),
            # UpdateNodeStatus and HeartbeatNodes calls (one may carry many nodes)
            "heartbeat_calls_per_s": round((beats1 - beats0) / wall, 1),
            "cpu_s": cpu,
            "cpu_pct_of_one_core": {n: round(100 * v / wall, 1) for n, v in cpu.items()},
            "target_etcd_writes_per_s": 1, "target_state_cpu_pct": 5,
        }
    finally:
        if sim is not None:
            sim.send_signal(signal.SIGTERM)
            try:
                sim.wait(60)
            except subprocess.TimeoutExpired:
                sim.kill()
        dev.send_signal(signal.SIGTERM)
        dev.wait(30)
        log.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--jobs", type=int, default=100)
    p.add_argument("--count", type=int, default=100)
    p.add_argument("--max-parallel", type=int, default=25)
    p.add_argument("--min-healthy", type=float, default=1.0)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--json", action="store_true")
    p.add_argument("--liveness", action="store_true",
                   help="measure idle nodes' liveness cost instead (no jobs)")
    p.add_argument("--idle", type=float, default=60.0,
                   help="--liveness: seconds measured while the nodes only heartbeat")
    p.add_argument("--settle", type=float, default=10.0,
                   help="--liveness: seconds waited after every node is alive")
    args = p.parse_args()
    out = liveness(args) if args.liveness else run(args)
    if args.json:
        print(json.dumps(out, indent=2))
        return
    for k, v in out.items():
        print(f"{k:>28}: {v}")


if __name__ == "__main__":
    main()
