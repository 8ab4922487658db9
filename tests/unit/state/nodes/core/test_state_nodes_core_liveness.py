"""Node liveness (:mod:`drover.state.nodes.core.liveness`): Nomad's TTL rule, the
lease it becomes, and the two plans (a node coming alive, silent nodes
marked down) on views built from plain data."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest
from state_core_data import KEYS, context, key, ready_node, service_job, stored, view

from drover.api.types.v1 import allocation_pb2, evaluation_pb2, node_pb2
from drover.coord.keys import Keyspace
from drover.coord.kv import Compare, Put
from drover.state.config import LivenessConfig
from drover.state.core import codec
from drover.state.core.tables import Tables
from drover.state.jobs.core import job_status
from drover.state.nodes.core.liveness import (
    HEARTBEAT_MISSED,
    heartbeat_ttl,
    lease_seconds,
    lease_too_short,
    liveness_key,
    plan_come_alive,
    plan_reap,
    rate_scaled_ttl,
    silent_candidates,
    told_ttl,
)

NOMAD = LivenessConfig()
DOWN = node_pb2.NODE_STATUS_DOWN
READY = node_pb2.NODE_STATUS_READY


def test_nomads_defaults() -> None:
    assert (NOMAD.min_heartbeat_ttl, NOMAD.max_heartbeats_per_second,
            NOMAD.heartbeat_grace) == (10.0, 50.0, 10.0)


@pytest.mark.parametrize(("nodes", "ttl"), [(0, 10.0), (1, 10.0), (500, 10.0), (501, 10.02),
                                            (1000, 20.0), (10_000, 200.0)])
def test_the_ttl_grows_with_the_cluster_past_the_minimum(nodes: int, ttl: float) -> None:
    assert rate_scaled_ttl(nodes, NOMAD) == pytest.approx(ttl)


def test_the_stagger_adds_up_to_one_more_ttl() -> None:
    assert heartbeat_ttl(10_000, NOMAD, 0.0) == 200.0
    assert heartbeat_ttl(10_000, NOMAD, 0.5) == 300.0
    assert heartbeat_ttl(10_000, NOMAD, 0.999) < 400.0


def test_all_nodes_together_heartbeat_at_most_the_rate() -> None:
    for n in (10, 1000, 10_000, 100_000):
        worst = n / heartbeat_ttl(n, NOMAD, 0.0)  # every node at the shortest TTL
        assert worst <= max(NOMAD.max_heartbeats_per_second, n / NOMAD.min_heartbeat_ttl)


def test_the_lease_covers_the_ttl_and_the_grace_and_the_node_is_told_the_ttl() -> None:
    assert lease_seconds(12.3, NOMAD) == 23
    assert told_ttl(23, NOMAD) == 13.0  # >= 12.3: never sooner than the lease needs
    assert told_ttl(lease_seconds(200.0, NOMAD), NOMAD) == 200.0


def test_a_lease_granted_for_a_small_cluster_is_replaced_when_it_grew() -> None:
    small = lease_seconds(heartbeat_ttl(10, NOMAD, 0.0), NOMAD)
    assert not lease_too_short(small, 400, NOMAD)
    assert lease_too_short(small, 10_000, NOMAD)
    assert not lease_too_short(lease_seconds(heartbeat_ttl(10_000, NOMAD, 0.0), NOMAD), 10_000,
                               NOMAD)


def test_liveness_keys_are_not_objects_but_the_tables_hold_who_has_one() -> None:
    k = liveness_key(KEYS, "n1")
    assert KEYS.parse(k) is None  # no table of them
    tables = Tables(KEYS)
    tables.stage([SimpleNamespace(key=liveness_key(KEYS, "n0"), value=b"n0",
                                  create_revision=3, mod_revision=3)])
    tables.load_staged()
    assert tables.live == {"n0"}  # from the list
    assert tables.apply(k, b"n1", 5, 5, deleted=False) is None  # from the watch
    assert tables.live == {"n0", "n1"} and tables.existing(k) == 0
    tables.apply(liveness_key(KEYS, "n0"), b"", 0, 6, deleted=True)  # its lease expired
    assert tables.live == {"n1"} and tables.existing(liveness_key(KEYS, "n0")) is None
    tables.apply(codec.KeyCodec(Keyspace("/other")).key(codec.LIVENESS, codec.GLOBAL_NS, "x"), b"x",
                 7, 7, deleted=False)
    assert tables.live == {"n1"}  # another keyspace's key is none of ours


def test_a_node_coming_alive_puts_its_key_on_the_lease_with_the_node_compared() -> None:
    v = view([(codec.NODES, ready_node(), 2, 3)])
    plan = plan_come_alive(v, context(), "n1", 0, 77, 12.5)
    assert plan.compares == (Compare(key(codec.NODES, codec.GLOBAL_NS, "n1"), "mod", 3),)
    put = plan.ops[1]
    assert isinstance(put, Put) and (put.key, put.lease) == (liveness_key(KEYS, "n1"), 77)
    node = node_pb2.Node.FromString(plan.ops[0].value)  # type: ignore[union-attr]
    assert node.heartbeat_lease == 77 and node.status == READY
    resp = plan.respond(9)
    assert resp.heartbeat_ttl.ToMilliseconds() == 12_500 and resp.index == 9


def test_a_node_brought_alive_by_another_replica_meanwhile_writes_nothing() -> None:
    v = view([(codec.NODES, ready_node(heartbeat_lease=5), 2, 3)])
    plan = plan_come_alive(v, context(), "n1", 4, 77, 12.5)
    assert not plan.writes
    assert not plan.respond(9).HasField("heartbeat_ttl")  # the caller renews lease 5


def test_a_node_down_for_missed_heartbeats_comes_back_ready_and_unblocks() -> None:
    blocked = evaluation_pb2.Evaluation(id="b1", namespace="default", type="service",
                                        status=evaluation_pb2.EVALUATION_STATUS_BLOCKED)
    n = ready_node(heartbeat_lease=5, status_description=HEARTBEAT_MISSED)
    n.status = DOWN
    v = view([(codec.NODES, n, 2, 3), (codec.EVALUATIONS, blocked, 4, 4)])
    plan = plan_come_alive(v, context(), "n1", 5, 77, 10.0)
    node = node_pb2.Node.FromString(plan.ops[0].value)  # type: ignore[union-attr]
    assert (node.status, node.status_description, node.heartbeat_lease) == (READY, "", 77)
    assert plan.respond(9).unblocked == 1
    ev = evaluation_pb2.Evaluation.FromString(plan.ops[2].value)  # type: ignore[union-attr]
    assert ev.status == evaluation_pb2.EVALUATION_STATUS_PENDING


def test_an_operators_down_stays_down_when_the_node_heartbeats() -> None:
    n = ready_node(heartbeat_lease=5)
    n.status = DOWN
    plan = plan_come_alive(view([(codec.NODES, n, 2, 3)]), context(), "n1", 5, 77, 10.0)
    node = node_pb2.Node.FromString(plan.ops[0].value)  # type: ignore[union-attr]
    assert node.status == DOWN and node.heartbeat_lease == 77
    assert plan.respond(9).unblocked == 0


def test_silent_candidates_are_ready_ids_without_a_key() -> None:
    assert silent_candidates(["a", "b", "c"], {"b"}) == ["a", "c"]


def _node(node_id: str, **kw: object) -> node_pb2.Node:
    n = ready_node(**kw)
    n.id = node_id
    return n


def _alloc(aid: str, node: str) -> allocation_pb2.Allocation:
    return allocation_pb2.Allocation(id=aid, namespace="default", job_id="web", node_id=node,
                                     desired_status=allocation_pb2.ALLOC_DESIRED_STATUS_RUN)


def test_silent_tracked_ready_nodes_go_down_compared_on_their_key_being_absent() -> None:
    tracked = _node("n1", heartbeat_lease=5)
    alive = _node("n2", heartbeat_lease=6)
    untracked = _node("n3")  # never heartbeat: not judged
    gone = _node("n4", heartbeat_lease=7)
    gone.status = DOWN  # already down
    v = view([(codec.NODES, tracked, 2, 3), (codec.NODES, alive, 2, 4),
              (codec.NODES, untracked, 2, 5), (codec.NODES, gone, 2, 6),
              (codec.ALLOCATIONS, _alloc("a1", "n1"), 7, 8),
              (codec.JOBS, stored(service_job(), 1), 1, 1)])
    plan = plan_reap(v, context(), live={"n2"})
    assert Compare(liveness_key(KEYS, "n1"), "create", 0) in plan.compares
    assert [e.kind for e in plan.events] == [codec.NODES, codec.ALLOCATIONS, codec.EVALUATIONS]
    node = node_pb2.Node.FromString(plan.ops[0].value)  # type: ignore[union-attr]
    assert (node.id, node.status, node.status_description) == ("n1", DOWN, HEARTBEAT_MISSED)
    ev = evaluation_pb2.Evaluation.FromString(plan.ops[2].value)  # type: ignore[union-attr]
    assert ev.triggered_by == "node-update" and ev.node_id == "n1"
    resp = plan.respond(9)
    assert (list(resp.node_ids), resp.lost, resp.remaining) == (["n1"], 1, 0)
    assert not plan.retry  # a node that came alive meanwhile: read the keys again


def test_nothing_silent_writes_nothing() -> None:
    v = view([(codec.NODES, ready_node(heartbeat_lease=5), 2, 3)])
    assert not plan_reap(v, context(), live={"n1"}).writes


def test_silent_nodes_past_one_txn_are_left_for_the_next() -> None:
    nodes = [(codec.NODES, _node(f"n{i:03d}", heartbeat_lease=i + 1), 2, 3 + i)
             for i in range(200)]
    plan = plan_reap(view(nodes), context(), live=set())
    resp = plan.respond(9)
    assert len(plan.ops) <= context().max_objects
    assert len(plan.compares) + 1 <= context().max_compares  # the fence's compare fits
    assert len(resp.node_ids) + resp.remaining == 200 and resp.remaining > 0


def test_silent_nodes_fill_one_txn_with_their_jobs_status_writes_counted() -> None:
    """Found at C1M: nodes holding allocations of many jobs were marked down
    in a txn one object over the cap, once job_status.follow added a status
    and summary write for every job the earlier nodes touched (refused, the
    reaper tried again forever). Every plan, followed, fits the cap."""
    ctx = dataclasses.replace(context(), max_txn_ops=64)
    objects: list[tuple[str, object, int, int]] = []
    for j in range(40):
        job = stored(service_job(), 1)
        job.id = f"job-{j:02d}"
        objects.append((codec.JOBS, job, 1, 1))
    for n in range(8):
        objects.append((codec.NODES, _node(f"n{n}", heartbeat_lease=n + 1), 2, 3))
        for i in range(7):  # 7 allocations of 7 jobs, some shared with other nodes
            a = _alloc(f"a{n}-{i}", f"n{n}")
            a.job_id = f"job-{(n * 5 + i) % 40:02d}"
            objects.append((codec.ALLOCATIONS, a, 4, 5))
    v = view(objects)
    marked: set[str] = set()
    while True:
        plan = plan_reap(v, ctx, live=marked)
        written = job_status.follow(v, plan, KEYS, None, ctx.max_objects)  # raises past the cap
        assert len(written.ops) <= ctx.max_objects
        resp = plan.respond(9)
        assert resp.node_ids
        marked |= set(resp.node_ids)
        if not resp.remaining:
            break
    assert marked == {f"n{n}" for n in range(8)}
