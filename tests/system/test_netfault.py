"""Network faults on real drover processes (drover.dev.netns): partitions,
one-way drops and loss while every process keeps running.

Each scenario starts etcd and `drover serve` replicas, each in its own
network namespace on a test bridge, runs the chaos test's load through the
proxy from a client host, injects one fault at a seeded moment for a seeded
time, heals, lets the load settle and judges the record as test_chaos does:
nothing lost, no deleted evaluation re-created, no delivery across terms
(:func:`test_chaos.overlaps`), every call bounded (:func:`test_chaos.too_long`),
and the state replicas' caches equal etcd. Each also prints, and writes to
bench/results/netfault.md, how long writes and deliveries stopped and which
calls failed with which reason.

Rerun a failing one with ``DROVER_NETFAULT_SEED=<seed printed>``.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import NamedTuple

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from netns_required import needs_netns

sys.path.insert(0, str(Path(__file__).resolve().parent))

from chaos_load import list_all
from netfault_cluster import (
    HOLD,
    NACK,
    TTL,
    Load,
    NetCluster,
    Svc,
    judge,
    measure,
    served_after,
    term,
    until,
    write_lin,
    write_result,
)
from test_chaos import TERMINAL_DEPLOYMENT

from drover.api.broker.v1 import broker_pb2, broker_pb2_grpc
from drover.api.deployments.v1 import deployments_pb2, deployments_pb2_grpc
from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import deployment_pb2
from drover.dev.netns import Net
from drover.rpc.remote import error_info

pytestmark = [pytest.mark.netfault, pytest.mark.slow,
              needs_netns,
              pytest.mark.timeout(240)]

SEED = int(os.environ.get("DROVER_NETFAULT_SEED", "3232"))
#: After healing, the load runs this long before it is judged.
SETTLE = 6.0
#: etcd's default --election-timeout (1000 ms).
ETCD_ELECTION_TIMEOUT = 1.0


async def deployments_terminal(load: Load) -> None:
    """Until every deployment is terminal (the load has stopped starting new ones)."""
    async def terminal() -> bool:
        ds = await list_all(load.state, "ListDeployments",
                            state_pb2.ListDeploymentsRequest(page_size=500), "deployments")
        return all(d.status in TERMINAL_DEPLOYMENT for d in ds)

    await until(terminal, 60, "every deployment terminal")


async def caches(c: NetCluster, load: Load) -> tuple[dict[str, set[str]], set[str]]:
    """Each state replica's evaluation ids (a consistent read, straight to
    it) and etcd's, once they agree or after 20 s."""
    cached: dict[str, set[str]] = {}
    in_etcd: set[str] = set()
    deadline = time.monotonic() + 20
    while True:
        in_etcd = await c.etcd_ids("evaluations")
        for s in [s for s in c.svcs.values() if s.service == "state"]:
            ch = c.channel(s)
            try:
                stub = state_pb2_grpc.StateServiceStub(ch)
                listed = await list_all(stub, "ListEvaluations", state_pb2.ListEvaluationsRequest(
                    page_size=1000), "evaluations")  # paged: a page holds at most 1000
                cached[s.name] = {e.id for e in listed}
            finally:
                await ch.close()
        if all(ids == in_etcd for ids in cached.values()) or time.monotonic() > deadline:
            return cached, in_etcd
        await asyncio.sleep(0.5)


async def probe_dequeue(c: NetCluster, name: str, until_t: float) -> list[tuple[float, str]]:
    """Dequeue straight on broker ``name`` (from the client host, which
    reaches it) every 0.3 s until ``until_t``, for a scheduler type no
    evaluation has: the leader answers OK (nothing), a follower refuses.
    Returns (start, code) per call."""
    ch = c.channel(c.svcs[name])
    out = []
    try:
        stub = broker_pb2_grpc.EvalBrokerServiceStub(ch)
        while time.monotonic() < until_t:
            start = time.monotonic()
            req = broker_pb2.DequeueRequest(schedulers=["netfault-probe"])
            req.timeout.FromMilliseconds(200)
            try:
                await stub.Dequeue(req, timeout=3)
                code = "OK"
            except grpc.aio.AioRpcError as e:
                info = error_info(e)
                code = e.code().name + (f" {info.reason}" if info else "")
            out.append((start, code))
            await asyncio.sleep(0.3)
    finally:
        await ch.close()
    return out


async def test_broker_leader_cut_from_etcd(etcd_prefix: str, tmp_path: Path) -> None:
    """The broker leader loses etcd but not its workers: once its lease may
    have expired (cut + TTL) it serves nothing, straight or through the
    proxy, and no delivery of its term follows one of the next leader's;
    after healing it follows the new leader."""
    rng = random.Random(SEED)
    cut_for = rng.uniform(3 * TTL, 4 * TTL)
    print(f"netfault seed {SEED}; logs in {tmp_path}")
    with Net() as net:
        c = NetCluster(net, tmp_path, etcd_prefix)
        c.start_etcd(1)
        proxy = _drover(c, states=1, brokers=2)
        load = Load(c, proxy, rng, seed=SEED)
        async with load.running():
            await asyncio.sleep(rng.uniform(2, 4))
            old = await load.leader("broker")
            old_terms = {term(d.token) for d in load.record.deliveries}
            t_cut = time.monotonic()
            net.cut(c.svcs[old].host, c.etcd_hosts[0])
            probes = await probe_dequeue(c, old, t_cut + cut_for)
            t_heal = time.monotonic()
            net.heal()

            async def follows() -> bool:
                servers = {s.replica: s.leader for s in await load.servers("broker")}
                return servers.get(old) is False and any(servers.values())

            await until(follows, 30, f"{old} back as a follower")
            new = await load.leader("broker")
            after = await probe_dequeue(c, old, time.monotonic() + 1.0)
            await asyncio.sleep(SETTLE)
            load.driver.running = False
            await asyncio.sleep(2)
            final = await load.final()
            cached, in_etcd = await caches(c, load)
    m = measure("a. broker leader cut from etcd", SEED, load.record, t_cut, t_heal,
                t_heal + SETTLE)
    print(m.show())
    write_result(m)
    write_lin(m.scenario, load.lin_figures)
    expiry = t_cut + TTL
    old_term = max(old_terms, default=0)
    served_late = served_after(probes, old, t_cut, expiry)
    stopped = next((s - t_cut for s, code in probes if code != "OK"), None)
    print(f"{old} (term {old_term}) cut from etcd for {cut_for:.1f}s: refused from "
          f"{stopped}s after the cut; probes {sorted({code for _, code in probes})}; "
          f"new leader {new}")
    problems = load.lin_problems + judge(load.record, cached, in_etcd, final)
    problems += served_late
    problems += [f"{d.eval_id} delivered under the cut leader's term {old_term} "
                 f"{d.start - t_cut:.1f}s after the cut"
                 for d in load.record.deliveries if term(d.token) == old_term and
                 d.start > expiry]
    problems += [f"{old} answered a Dequeue after healing: it leads again?"
                 for _, code in after if code == "OK" and new != old]
    assert stopped is not None and stopped <= TTL + HOLD, f"{old} never stopped serving"
    assert not problems, f"seed {SEED}: logs in {tmp_path}:\n" + "\n".join(problems[:40])


async def health(c: NetCluster, name: str) -> str:
    """``name``'s overall readiness (health Check of ``""``), or the error."""
    ch = c.channel(c.svcs[name])
    try:
        resp = await health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(),
                                                          timeout=2)
        return str(health_pb2.HealthCheckResponse.ServingStatus.Name(resp.status))
    except grpc.aio.AioRpcError as e:
        return e.code().name
    finally:
        await ch.close()


#: The staleness bound of scenario c's bounded stale reads (QueryOptions.max_stale).
MAX_STALE = 2.0


def _drover(c: NetCluster, *, states: int, brokers: int, watchers: int = 0) -> Svc:
    """State replicas (every one a seed of the others' clients), brokers,
    deployment watchers and the proxy, each in a namespace of its own,
    started in that order and serving; the proxy, which the load calls."""
    st = [c.serve("state", f"state-{i}") for i in range(states)]
    seeds = ",".join(s.address for s in st)
    br = [c.serve("broker", f"broker-{i}", "--state-address", seeds,
                  "--broker-nack-timeout", f"{NACK}s") for i in range(brokers)]
    wa = [c.serve("deployments", f"watcher-{i}", "--state-address", seeds)
          for i in range(watchers)]
    proxy = c.serve("proxy", "proxy", "--hold-timeout", str(HOLD))
    c.wait_serving(*st, *br, *wa, proxy)
    return proxy


class ReadProbe(NamedTuple):
    start: float
    #: How long the consistent read took, and its code.
    took: float
    code: str
    #: The plain stale read's last_contact (-1: failed).
    contact: float
    #: The bounded stale read on the replica: its code and, refused, the
    #: last_contact its ErrorInfo gave (-1: none); how long it took.
    bounded: str
    bounded_contact: float
    bounded_took: float
    #: The same bounded read through the proxy: its code.
    via_proxy: str


def _code(e: grpc.aio.AioRpcError) -> str:
    info = error_info(e)
    return e.code().name + (f" {info.reason}" if info else "")


async def probe_reads(c: NetCluster, name: str, proxy: Svc, until_t: float) -> list[ReadProbe]:
    """A consistent, a stale and a bounded stale (max_stale MAX_STALE)
    ListJobs straight on state replica ``name``, and the bounded one through
    ``proxy``, every 0.5 s until ``until_t``."""
    ch, via = c.channel(c.svcs[name]), c.channel(proxy)
    out = []
    try:
        stub, proxied = state_pb2_grpc.StateServiceStub(ch), state_pb2_grpc.StateServiceStub(via)
        bounded = state_pb2.ListJobsRequest(page_size=1)
        bounded.query.max_stale.FromMilliseconds(int(MAX_STALE * 1000))
        while time.monotonic() < until_t:
            start = time.monotonic()
            try:
                await stub.ListJobs(state_pb2.ListJobsRequest(page_size=1), timeout=10)
                code = "OK"
            except grpc.aio.AioRpcError as e:
                code = _code(e)
            took = time.monotonic() - start
            stale = state_pb2.ListJobsRequest(page_size=1)
            stale.query.stale = True
            try:
                got = await stub.ListJobs(stale, timeout=2)
                contact = got.meta.last_contact.ToMilliseconds() / 1000
            except grpc.aio.AioRpcError:
                contact = -1.0
            b_start, b_contact = time.monotonic(), -1.0
            try:
                await stub.ListJobs(bounded, timeout=10)
                b_code = "OK"
            except grpc.aio.AioRpcError as e:
                b_code = _code(e)
                info = error_info(e)
                if info and "last_contact" in info.metadata:
                    b_contact = float(info.metadata["last_contact"])
            b_took = time.monotonic() - b_start
            try:
                await proxied.ListJobs(bounded, timeout=10)
                p_code = "OK"
            except grpc.aio.AioRpcError as e:
                p_code = _code(e)
            out.append(ReadProbe(start, took, code, contact, b_code, b_contact, b_took,
                                 p_code))
            await asyncio.sleep(0.5)
    finally:
        await ch.close()
        await via.close()
    return out


async def test_state_replica_cut_from_etcd(etcd_prefix: str, tmp_path: Path) -> None:
    """The state replica the proxy uses loses etcd but not its clients: it
    leaves readiness within a few seconds, refuses consistent reads within a
    few seconds (never from its cache), reports its staleness on stale
    reads; the proxy and the broker (its state pool) go to the other
    replica, so writes and deliveries go on while it is cut; healed, it is
    ready again and its cache equals etcd."""
    rng = random.Random(SEED + 1)
    cut_for = rng.uniform(4 * TTL, 5 * TTL)
    print(f"netfault seed {SEED}; logs in {tmp_path}")
    with Net() as net:
        c = NetCluster(net, tmp_path, etcd_prefix)
        c.start_etcd(1)
        proxy = _drover(c, states=2, brokers=1)
        load = Load(c, proxy, rng, seed=SEED)
        async with load.running():
            await until(lambda: _n_servers(load, "state", 2), 30, "both state replicas listed")
            await asyncio.sleep(rng.uniform(2, 4))
            cut = (await load.servers("state"))[0].replica  # the one the proxy uses
            t_cut = time.monotonic()
            net.cut(c.svcs[cut].host, c.etcd_hosts[0])

            async def not_ready() -> bool:
                return await health(c, cut) == "NOT_SERVING"

            # Readiness is re-checked every 2 s and its etcd probe waits up to
            # 3 s: within TTL + 6 s, slack included for a loaded CI machine.
            await until(not_ready, TTL + 6, f"{cut} not ready")
            t_unready = time.monotonic() - t_cut
            reads = await probe_reads(c, cut, proxy, t_cut + cut_for)
            t_heal = time.monotonic()
            net.heal()

            async def ready() -> bool:
                return await health(c, cut) == "SERVING"

            await until(ready, 30, f"{cut} ready again")
            t_ready = time.monotonic() - t_heal
            await asyncio.sleep(SETTLE)
            load.driver.running = False
            await asyncio.sleep(2)
            final = await load.final()
            cached, in_etcd = await caches(c, load)
    m = measure("c. state replica cut from etcd", SEED + 1, load.record, t_cut, t_heal,
                t_heal + SETTLE)
    print(m.show())
    write_result(m)
    write_lin(m.scenario, load.lin_figures)
    print(f"{cut} cut from etcd for {cut_for:.1f}s: not ready after {t_unready:.1f}s, ready "
          f"{t_ready:.1f}s after healing; consistent reads: "
          f"{sorted({r.code for r in reads})}, longest "
          f"{max((r.took for r in reads), default=0):.1f}s; stale reads' last_contact "
          f"up to {max((r.contact for r in reads), default=0):.1f}s; bounded stale reads "
          f"(max_stale {MAX_STALE:g}s): {sorted({r.bounded for r in reads})} on {cut}, longest "
          f"{max((r.bounded_took for r in reads), default=0):.1f}s, "
          f"{sorted({r.via_proxy for r in reads})} through the proxy")
    problems = load.lin_problems + judge(load.record, cached, in_etcd, final)
    problems += [f"a consistent read on {cut} answered {r.start - t_cut:.1f}s into the cut"
                 for r in reads if r.code == "OK"]
    problems += [f"a consistent read on {cut} took {r.took:.1f}s to refuse"
                 for r in reads if r.took > 5.0]
    # Its staleness shows: a stale read's last_contact grows with the cut.
    problems += [f"a stale read on {cut} {r.start - t_cut:.1f}s into the cut said last_contact "
                 f"{r.contact:.1f}s" for r in reads if 0 <= r.contact < r.start - t_cut - 2 * TTL]
    # A bounded stale read refuses past its bound (within the cache's 3 s
    # marker timeout: its proof of contact), giving the replica's last
    # contact; through the proxy the same read is served by the other replica.
    # (The probes start once the replica left readiness, TTL+ into the cut:
    # past the bound already.)
    problems += [f"a read with max_stale {MAX_STALE:g}s on {cut} {r.start - t_cut:.1f}s into "
                 f"the cut answered {r.bounded}"
                 for r in reads if r.bounded != "UNAVAILABLE STALE_READ_BOUND"]
    problems += [f"a read with max_stale {MAX_STALE:g}s on {cut} {r.start - t_cut:.1f}s into "
                 f"the cut gave last_contact {r.bounded_contact:.1f}s"
                 for r in reads if 0 <= r.bounded_contact < MAX_STALE]
    problems += [f"a read with max_stale {MAX_STALE:g}s on {cut} took {r.bounded_took:.1f}s "
                 "to refuse" for r in reads if r.bounded_took > 5.0]
    problems += [f"a read with max_stale {MAX_STALE:g}s through the proxy "
                 f"{r.start - t_cut:.1f}s into the cut answered {r.via_proxy}"
                 for r in reads if r.via_proxy != "OK"]
    problems += [] if reads else ["no reads probed the cut replica"]
    # Routed around: writes and deliveries resumed while it was still cut.
    problems += [f"writes stopped {m.write_gap:.1f}s of a {cut_for:.1f}s cut"
                 ] if m.write_gap >= cut_for else []
    problems += [f"deliveries stopped {m.delivery_gap:.1f}s of a {cut_for:.1f}s cut"
                 ] if m.delivery_gap >= cut_for else []
    assert not problems, f"seed {SEED}: logs in {tmp_path}:\n" + "\n".join(problems[:40])


async def _n_servers(load: Load, service: str, n: int) -> bool:
    return len(await load.servers(service)) >= n


async def probe_watcher(c: NetCluster, name: str, until_t: float) -> list[tuple[float, str]]:
    """A leader-only call straight on watcher ``name`` every 0.3 s until
    ``until_t``: resuming a deployment that does not exist. A leader looks
    it up (NOT_FOUND: served), a follower refuses (NOT_LEADER)."""
    ch = c.channel(c.svcs[name])
    out = []
    try:
        stub = deployments_pb2_grpc.DeploymentWatcherServiceStub(ch)
        while time.monotonic() < until_t:
            start = time.monotonic()
            try:
                await stub.PauseDeployment(deployments_pb2.PauseDeploymentRequest(
                    deployment_id="netfault-probe", pause=False), timeout=3)
                code = "OK"
            except grpc.aio.AioRpcError as e:
                info = error_info(e)
                code = e.code().name + (f" {info.reason}" if info else "")
            out.append((start, code))
            await asyncio.sleep(0.3)
    finally:
        await ch.close()
    return out


def _served(code: str) -> bool:
    """A probe the replica answered as a leader (found or not)."""
    return code == "OK" or code.startswith("NOT_FOUND")


async def test_watcher_leader_cut_from_etcd(etcd_prefix: str, tmp_path: Path) -> None:
    """The deployment watcher leader loses etcd but not the state service:
    once its lease may have expired it serves nothing; the other watcher
    takes over, every deployment still ends and every successful rolling
    update gets its follow-up evaluation; healed, the old one follows."""
    rng = random.Random(SEED + 2)
    cut_for = rng.uniform(3 * TTL, 4 * TTL)
    print(f"netfault seed {SEED}; logs in {tmp_path}")
    with Net() as net:
        c = NetCluster(net, tmp_path, etcd_prefix)
        c.start_etcd(1)
        proxy = _drover(c, states=1, brokers=1, watchers=2)
        load = Load(c, proxy, rng, seed=SEED)
        async with load.running():
            await asyncio.sleep(rng.uniform(3, 5))
            old = await load.leader("deployments")
            t_cut = time.monotonic()
            net.cut(c.svcs[old].host, c.etcd_hosts[0])
            probes = await probe_watcher(c, old, t_cut + cut_for)
            t_heal = time.monotonic()
            net.heal()

            async def follows() -> bool:
                servers = {s.replica: s.leader for s in await load.servers("deployments")}
                return servers.get(old) is False and any(servers.values())

            await until(follows, 30, f"{old} back as a follower")
            new = await load.leader("deployments")
            await asyncio.sleep(SETTLE)
            load.driver.running = False
            await deployments_terminal(load)
            final = await load.final()
            deployments = await list_all(load.state, "ListDeployments",
                                         state_pb2.ListDeploymentsRequest(page_size=500),
                                         "deployments")
            cached, in_etcd = await caches(c, load)
    m = measure("b. watcher leader cut from etcd", SEED + 2, load.record, t_cut, t_heal,
                t_heal + SETTLE)
    print(m.show())
    write_result(m)
    write_lin(m.scenario, load.lin_figures)
    expiry = t_cut + TTL
    stopped = next((s - t_cut for s, code in probes if not _served(code)), None)
    followed = {e.deployment_id for e in final.evals if e.triggered_by == "deployment-watcher"}
    succeeded = [d for d in deployments
                 if d.status == deployment_pb2.DEPLOYMENT_STATUS_SUCCESSFUL]
    print(f"{old} cut from etcd for {cut_for:.1f}s: refused from {stopped}s after the cut; "
          f"probes {sorted({code for _, code in probes})}; new leader {new}; deployments "
          f"{len(deployments)} ({len(succeeded)} successful, {len(followed)} followed up)")
    problems = load.lin_problems + judge(load.record, cached, in_etcd, final)
    problems += served_after(probes, old, t_cut, expiry, _served)
    problems += [f"deployment {d.id} (job {d.job_id} v{d.job_version}) succeeded without the "
                 "watcher's follow-up evaluation"
                 for d in succeeded if d.job_version > 0 and d.id not in followed]
    assert stopped is not None and stopped <= TTL + HOLD, f"{old} never stopped serving"
    assert not problems, f"seed {SEED}: logs in {tmp_path}:\n" + "\n".join(problems[:40])


async def _loss_run(etcd_prefix: str, tmp_path: Path, seed: int, scenario: str,
                    fault: Callable[[Net, NetCluster, Load], Awaitable[str]],
                    fault_for: float) -> None:
    """Two state replicas, two brokers, two watchers and the proxy under the
    load; ``fault`` applied for ``fault_for`` seconds, then healed; the
    chaos judges, every deployment terminal, caches equal etcd."""
    rng = random.Random(seed)
    print(f"netfault seed {seed}; logs in {tmp_path}")
    with Net() as net:
        c = NetCluster(net, tmp_path, etcd_prefix)
        c.start_etcd(1)
        proxy = _drover(c, states=2, brokers=2, watchers=2)
        load = Load(c, proxy, rng, seed=seed)
        async with load.running():
            await until(lambda: _n_servers(load, "state", 2), 30, "both state replicas listed")
            await asyncio.sleep(rng.uniform(2, 4))
            t_fault = time.monotonic()
            what = await fault(net, c, load)
            await asyncio.sleep(fault_for)
            t_heal = time.monotonic()
            net.heal()
            await asyncio.sleep(SETTLE)
            load.driver.running = False
            await deployments_terminal(load)
            final = await load.final()
            cached, in_etcd = await caches(c, load)
    m = measure(scenario, seed, load.record, t_fault, t_heal, t_heal + SETTLE)
    print(f"{what} for {fault_for:.1f}s")
    print(m.show())
    write_result(m)
    write_lin(m.scenario, load.lin_figures)
    problems = load.lin_problems + judge(load.record, cached, in_etcd, final)
    problems += [f"writes stopped {m.write_gap:.1f}s of a {fault_for:.1f}s fault"
                 ] if m.write_gap >= fault_for else []
    assert not problems, f"seed {seed}: logs in {tmp_path}:\n" + "\n".join(problems[:40])


async def test_proxy_to_state_one_way_drop(etcd_prefix: str, tmp_path: Path) -> None:
    """Everything the proxy sends to the state replica it uses vanishes
    (that replica still sends to the proxy, and reaches etcd and the
    rest): the proxy's hold bounds the silence, every call through it
    stays bounded and writes go on on the other replica."""
    async def fault(net: Net, c: NetCluster, load: Load) -> str:
        front = (await load.servers("state"))[0].replica
        net.drop(c.svcs["proxy"].host, c.svcs[front].host)
        return f"proxy -> {front} dropped (one way)"

    rng = random.Random(SEED + 3)
    await _loss_run(etcd_prefix, tmp_path, SEED + 3, "e1. proxy -> state one-way drop", fault,
                    rng.uniform(8, 10))


async def test_loss_on_every_link(etcd_prefix: str, tmp_path: Path) -> None:
    """5 % of every packet on every link (etcd, replicas, proxy, the load)
    dropped at random: the chaos load still converges and is judged."""
    async def fault(net: Net, c: NetCluster, load: Load) -> str:
        net.loss_everywhere(5)
        return "5% random loss on every link"

    rng = random.Random(SEED + 4)
    await _loss_run(etcd_prefix, tmp_path, SEED + 4, "e2. 5% loss on every link", fault,
                    rng.uniform(12, 15))


async def test_etcd_minority_with_drover_replicas(etcd_prefix: str, tmp_path: Path) -> None:
    """One etcd member of three partitioned from the other two, and on its
    side (reaching only it among the etcd members, still reached by every
    client) the broker leader, the watcher leader and the state replica the
    proxy uses. A minority member answers nothing linearizable: they lose
    their leases, the leaders stop serving before the majority side's
    serve, the state replica refuses consistent reads, and the load goes on
    on the majority side; healed, everything converges."""
    rng = random.Random(SEED + 5)
    # Long enough to see the majority side resume while it lasts: measured
    # 5-9 s (etcd re-elects, leases expire, the proxy learns membership).
    cut_for = rng.uniform(6 * TTL, 7 * TTL)
    print(f"netfault seed {SEED}; logs in {tmp_path}")
    with Net() as net:
        c = NetCluster(net, tmp_path, etcd_prefix)
        c.start_etcd(3)
        proxy = _drover(c, states=2, brokers=2, watchers=2)
        load = Load(c, proxy, rng, seed=SEED)
        async with load.running():
            await until(lambda: _n_servers(load, "state", 2), 30, "both state replicas listed")
            await asyncio.sleep(rng.uniform(2, 4))
            minority = [await load.leader("broker"), await load.leader("deployments"),
                        (await load.servers("state"))[0].replica]
            lone, majority = c.etcd_hosts[2], c.etcd_hosts[:2]
            etcd_leader = next((i for i, m in enumerate(c.etcd) if m.is_leader()), -1)
            old_term = max((term(d.token) for d in load.record.deliveries), default=0)
            t_cut = time.monotonic()
            for h in [lone, *(c.svcs[n].host for n in minority)]:
                for m in majority:
                    net.cut(h, m)
            broker_probes, watcher_probes, reads = await asyncio.gather(
                probe_dequeue(c, minority[0], t_cut + cut_for),
                probe_watcher(c, minority[1], t_cut + cut_for),
                probe_reads(c, minority[2], proxy, t_cut + cut_for))
            t_heal = time.monotonic()
            net.heal()
            await asyncio.to_thread(_all_healthy, c, 30)
            await asyncio.sleep(SETTLE)
            load.driver.running = False
            await deployments_terminal(load)
            final = await load.final()
            cached, in_etcd = await caches(c, load)
    m = measure("d. etcd minority (1 of 3) with drover replicas", SEED + 5, load.record, t_cut,
                t_heal, t_heal + SETTLE)
    print(f"on the minority side for {cut_for:.1f}s: etcd-2, {', '.join(minority)}; broker "
          f"probes {sorted({c for _, c in broker_probes})}, watcher probes "
          f"{sorted({c for _, c in watcher_probes})}, consistent reads "
          f"{sorted({r.code for r in reads})}, reads with max_stale {MAX_STALE:g}s "
          f"{sorted({r.bounded for r in reads})}")
    print(m.show())
    write_result(m)
    write_lin(m.scenario, load.lin_figures)
    # An isolated etcd leader still answers keepalives until it steps down
    # (etcd's check-quorum: one election timeout, 1 s by default), so the
    # minority side's lease clocks may run that much past the cut.
    expiry = t_cut + TTL + ETCD_ELECTION_TIMEOUT
    first_new = min((d.end for d in load.record.deliveries
                     if term(d.token) > old_term and d.start > t_cut), default=float("inf"))
    print(f"etcd leader at the cut: etcd-{etcd_leader}; first delivery of a newer broker term "
          f"{first_new - t_cut:.1f}s after the cut")
    # A write that reached the minority member just after the cut would wait
    # etcd's request timeout (5 s + 2 election timeouts) for an answer that
    # cannot come; the state service's etcd write timeout (3 s) ends it
    # sooner, OUTCOME_UNKNOWN, within every call's bound: nothing is excused.
    problems = load.lin_problems + judge(load.record, cached, in_etcd, final)
    problems += served_after(broker_probes, minority[0], t_cut, min(expiry, first_new))
    problems += served_after(watcher_probes, minority[1], t_cut, expiry, _served)
    problems += [f"a consistent read on {minority[2]} answered {r.start - t_cut:.1f}s into "
                 "the partition" for r in reads if r.code == "OK"]
    problems += [f"a consistent read on {minority[2]} took {r.took:.1f}s to refuse"
                 for r in reads if r.took > 5.0]
    problems += [f"a read with max_stale {MAX_STALE:g}s on {minority[2]} {r.start - t_cut:.1f}s "
                 f"into the partition answered {r.bounded}"
                 for r in reads if r.bounded != "UNAVAILABLE STALE_READ_BOUND"
                 # (it follows the consistent read: past the bound once that is)
                 and r.start + r.took - t_cut > MAX_STALE + 0.5]
    problems += [f"writes stopped {m.write_gap:.1f}s of a {cut_for:.1f}s partition"
                 ] if m.write_gap >= cut_for else []
    problems += [f"deliveries stopped {m.delivery_gap:.1f}s of a {cut_for:.1f}s partition"
                 ] if m.delivery_gap >= cut_for else []
    assert not problems, f"seed {SEED}: logs in {tmp_path}:\n" + "\n".join(problems[:40])


def _all_healthy(c: NetCluster, within: float) -> None:
    deadline = time.monotonic() + within
    while not all(m.healthy() for m in c.etcd):
        assert time.monotonic() < deadline, "etcd did not heal"
        time.sleep(0.2)
