"""Evaluations against real etcd: paged delete, bad inputs, fences, blocking."""

from __future__ import annotations

import asyncio
import random
import time

import grpc
import pytest
from google.protobuf.duration_pb2 import Duration
from virtual_clock import VirtualClock

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import evaluation_pb2, query_pb2, scheduler_pb2
from drover.coord.kv import prefix_end
from drover.rpc.remote import error_info

PENDING = evaluation_pb2.EVALUATION_STATUS_PENDING
COMPLETE = evaluation_pb2.EVALUATION_STATUS_COMPLETE


def _eval(rnd: random.Random, job: str, status: evaluation_pb2.EvaluationStatus,
          ns: str = "default") -> (
    evaluation_pb2.Evaluation
):
    return evaluation_pb2.Evaluation(id=f"{rnd.getrandbits(64):016x}", namespace=ns,
                                     job_id=job, status=status, type="service",
                                     triggered_by="job-register", priority=50)


async def _leader_fence(replica) -> tuple[tuple[str, str]]:
    """A fence on an election key of the replica's keyspace (what a leader holds)."""
    from drover.coord.kv import Put
    key = f"{replica.service.cache.keys.base}election/broker/test-{random.getrandbits(32):x}"
    res = await replica.store.txn([], [Put(key.encode(), b"me")])
    return (("drover-fence", f"{key}@{res.revision}"),)


async def _seed(replica, n: int, seed: int = 7) -> list[evaluation_pb2.Evaluation]:
    stub = replica.stub
    fence = await _leader_fence(replica)  # COMPLETE is an outcome: leader only
    rnd = random.Random(seed)
    evs = [_eval(rnd, f"j{i % 5}", rnd.choice([PENDING, COMPLETE]), rnd.choice(["default", "b"]))
           for i in range(n)]
    i = 0
    while i < len(evs):  # batches of random size: many different create revisions
        k = rnd.randint(1, 9)
        await stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(evaluations=evs[i:i + k]),
                                     metadata=fence)
        i += k
    return evs


async def _pause(stub, paused: bool = True) -> None:
    await stub.SetSchedulerConfig(state_pb2.SetSchedulerConfigRequest(
        config=scheduler_pb2.SchedulerConfig(pause_eval_broker=paused)))


async def _expect(call, code: grpc.StatusCode, reason: str) -> str:
    with pytest.raises(grpc.RpcError) as err:
        await call
    assert err.value.code() == code, err.value.details()
    info = error_info(err.value)
    assert info is not None and info.reason == reason, info
    return str(err.value.details())


async def _all_ids(stub) -> set[str]:
    ids, token = set(), ""
    while True:
        r = await stub.ListEvaluations(state_pb2.ListEvaluationsRequest(
            namespace="*", page_size=50, page_token=token))
        ids |= {e.id for e in r.evaluations}
        token = r.next_page_token
        if not token:
            return ids


async def test_multi_page_delete_by_filter_deletes_exactly_the_matching_set(replica) -> None:
    stub = replica.stub
    evs = await _seed(replica, 300)
    await _pause(stub)
    flt = 'status == "pending" && job_id != "j3"'
    want_gone = {e.id for e in evs if e.status == PENDING and e.job_id != "j3"}
    count = await stub.CountEvaluations(state_pb2.CountEvaluationsRequest(namespace="*",
                                                                          filter=flt))
    assert count.count == len(want_gone)
    dry = await stub.DeleteEvaluations(state_pb2.DeleteEvaluationsRequest(
        filter=flt, namespace="*", page_size=1000, dry_run=True))
    assert dry.deleted == min(127, len(want_gone))
    total, token, calls = 0, "", 0
    while True:
        r = await stub.DeleteEvaluations(state_pb2.DeleteEvaluationsRequest(
            filter=flt, namespace="*", page_size=13, page_token=token))
        total += r.deleted
        calls += 1
        token = r.next_page_token
        if not token:
            break
    left = await _all_ids(stub)
    assert left == {e.id for e in evs} - want_gone
    assert total == len(want_gone) and calls >= len(want_gone) // 13


async def test_delete_is_refused_unless_the_broker_is_paused(replica) -> None:
    await _seed(replica, 3)
    details = await _expect(replica.stub.DeleteEvaluations(
        state_pb2.DeleteEvaluationsRequest(filter='status == "pending"')),
        grpc.StatusCode.FAILED_PRECONDITION, "BROKER_NOT_PAUSED")
    assert "drover operator scheduler pause" in details


async def test_delete_by_ids_is_all_or_nothing(replica) -> None:
    stub = replica.stub
    evs = await _seed(replica, 6)
    await _pause(stub)
    ids = [evs[0].id, evs[1].id, "nope"]
    await _expect(stub.DeleteEvaluations(state_pb2.DeleteEvaluationsRequest(ids=ids)),
                  grpc.StatusCode.NOT_FOUND, "NOT_FOUND")
    assert len(await _all_ids(stub)) == 6
    r = await stub.DeleteEvaluations(state_pb2.DeleteEvaluationsRequest(ids=ids[:2]))
    assert r.deleted == 2 and len(await _all_ids(stub)) == 4


async def test_bad_inputs(replica) -> None:
    stub = replica.stub
    await _seed(replica, 30)
    inv = grpc.StatusCode.INVALID_ARGUMENT
    first = await stub.ListEvaluations(state_pb2.ListEvaluationsRequest(
        namespace="*", page_size=5, filter='status == "pending"'))
    token = first.next_page_token
    assert token
    # Tampered, mismatched (other filter / order), foreign (another method).
    tampered = token[:-3] + ("A" if token[-3] != "A" else "B") + token[-2:]
    for req in [
        state_pb2.ListEvaluationsRequest(namespace="*", page_token=tampered,
                                         filter='status == "pending"'),
        state_pb2.ListEvaluationsRequest(namespace="*", page_token=token,
                                         filter='status == "complete"'),
        state_pb2.ListEvaluationsRequest(namespace="*", page_token=token,
                                         filter='status == "pending"',
                                         order_by="create_index desc"),
    ]:
        await _expect(stub.ListEvaluations(req), inv, "INVALID_PAGE_TOKEN")
    await _expect(stub.ListJobs(state_pb2.ListJobsRequest(namespace="*", page_token=token)),
                  inv, "INVALID_PAGE_TOKEN")
    details = await _expect(stub.ListEvaluations(state_pb2.ListEvaluationsRequest(
        filter="status == ")), inv, "INVALID_FILTER")
    assert "line 1, column 11" in details
    await _expect(stub.CountEvaluations(state_pb2.CountEvaluationsRequest(filter="nope == 1")),
                  inv, "INVALID_FILTER")
    await _expect(stub.ListEvaluations(state_pb2.ListEvaluationsRequest(page_size=-1)),
                  inv, "INVALID_ARGUMENT")
    await _expect(stub.DeleteEvaluations(state_pb2.DeleteEvaluationsRequest(
        ids=["a"], filter='status == "pending"')), inv, "INVALID_ARGUMENT")
    await _expect(stub.DeleteEvaluations(state_pb2.DeleteEvaluationsRequest()), inv,
                  "INVALID_ARGUMENT")
    bad_prio = evaluation_pb2.Evaluation(id="x", type="service", priority=101)
    await _expect(stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(
        evaluations=[bad_prio])), inv, "INVALID_ARGUMENT")
    no_id = evaluation_pb2.Evaluation(type="service")
    await _expect(stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(
        evaluations=[no_id])), inv, "INVALID_ARGUMENT")
    await _expect(stub.ListEvaluations(state_pb2.ListEvaluationsRequest(namespace="a/b")), inv,
                  "INVALID_ARGUMENT")
    await _expect(stub.GetEvaluation(state_pb2.GetEvaluationRequest(id="missing")),
                  grpc.StatusCode.NOT_FOUND, "NOT_FOUND")


async def test_fenced_writes(replica) -> None:
    stub, store = replica.stub, replica.store
    leader_key = f"{replica.service.cache.keys.base}election/broker/abc"
    from drover.coord.kv import Put
    res = await store.txn([], [Put(leader_key.encode(), b"me")])
    ev = evaluation_pb2.Evaluation(id="fenced", type="service")
    req = state_pb2.UpsertEvaluationsRequest(evaluations=[ev])
    fence = (("drover-fence", f"{leader_key}@{res.revision}"),)
    ok = await stub.UpsertEvaluations(req, metadata=fence)
    assert ok.eval_ids == ["fenced"]
    await _expect(stub.UpsertEvaluations(req, metadata=(
        ("drover-fence", f"{leader_key}@{res.revision - 1}"),)),
        grpc.StatusCode.FAILED_PRECONDITION, "FENCE_LOST")
    await _expect(stub.UpsertEvaluations(req, metadata=(("drover-fence", "garbage"),)),
                  grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FENCE")


async def test_broker_outcomes_require_a_leader_fence(replica) -> None:
    """Unfenced: a pending create is accepted, and the same create again
    (a retry) is OK with nothing written; a terminal status or a change to
    an existing evaluation is refused with FENCE_REQUIRED and writes nothing;
    a fence on a non-election key proves nothing and is refused too."""
    stub, store = replica.stub, replica.store
    pending = evaluation_pb2.Evaluation(id="o1", type="service", status=PENDING)
    first = await stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(
        evaluations=[pending]))
    before = await store.revision()
    retry = await stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(
        evaluations=[pending]))
    assert retry.eval_ids == ["o1"] and retry.index == first.index
    assert await store.revision() == before
    done = evaluation_pb2.Evaluation(id="o1", type="service", status=COMPLETE)
    fresh_done = evaluation_pb2.Evaluation(id="o2", type="service", status=COMPLETE)
    again = evaluation_pb2.Evaluation(id="o1", type="service", status=PENDING, priority=90)
    pre = grpc.StatusCode.FAILED_PRECONDITION
    for ev in (done, fresh_done, again):
        await _expect(stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(
            evaluations=[ev])), pre, "FENCE_REQUIRED")
    job_key = f"/elsewhere-{random.getrandbits(32):x}/x"
    from drover.coord.kv import Put
    res = await store.txn([], [Put(job_key.encode(), b"not an election key")])
    await _expect(stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(
        evaluations=[done]), metadata=(("drover-fence", f"{job_key}@{res.revision}"),)),
        pre, "FENCE_REQUIRED")
    assert await store.revision() == res.revision == before + 1  # only the test's own put
    got = await stub.GetEvaluation(state_pb2.GetEvaluationRequest(id="o1"))
    assert got.evaluation.status == PENDING and got.evaluation.priority != 90
    ok = await stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(evaluations=[done]),
                                      metadata=await _leader_fence(replica))
    assert ok.eval_ids == ["o1"]


async def test_blocking_list_returns_on_change_or_after_max_wait(replica) -> None:
    stub = replica.stub
    await _seed(replica, 2)
    first = await stub.ListEvaluations(state_pb2.ListEvaluationsRequest(namespace="*"))
    idx = first.meta.index

    async def write_later() -> None:
        await asyncio.sleep(0.3)
        await _seed(replica, 1, seed=99)

    task = asyncio.create_task(write_later())
    t0 = time.monotonic()
    r = await stub.ListEvaluations(state_pb2.ListEvaluationsRequest(
        namespace="*", query=query_pb2.QueryOptions(min_index=idx, max_wait=Duration(seconds=5))))
    await task
    assert r.meta.index > idx and len(r.evaluations) == 3
    assert 0.25 < time.monotonic() - t0 < 3
    t0 = time.monotonic()
    r2 = await stub.CountEvaluations(state_pb2.CountEvaluationsRequest(
        namespace="*", query=query_pb2.QueryOptions(
            min_index=r.meta.index, max_wait=Duration(nanos=300_000_000))))
    waited = time.monotonic() - t0
    assert r2.meta.index == r.meta.index and r2.count == 3
    assert 0.3 <= waited < 0.3 * (1 + 1 / 16) + 0.5


async def test_get_evaluation_related(replica) -> None:
    stub = replica.stub
    a = evaluation_pb2.Evaluation(id="a", type="service", next_eval="b")
    b = evaluation_pb2.Evaluation(id="b", type="service", previous_eval="a", next_eval="c",
                                  blocked_eval="d")
    c = evaluation_pb2.Evaluation(id="c", type="service", previous_eval="b")
    d = evaluation_pb2.Evaluation(id="d", type="service", namespace="default")
    await stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(evaluations=[a, b, c, d]))
    r = await stub.GetEvaluation(state_pb2.GetEvaluationRequest(id="b", include_related=True))
    assert r.evaluation.id == "b" and [e.id for e in r.related] == ["a", "c", "d"]
    assert all(e.create_index > 0 for e in r.related)
    plain = await stub.GetEvaluation(state_pb2.GetEvaluationRequest(id="b"))
    assert not plain.related
    assert r.evaluation.create_index > 0 and r.meta.last_contact.ToTimedelta().total_seconds() < 5
    assert r.meta.known_leader and r.meta.index >= r.evaluation.modify_index


async def test_last_contact_counts_any_etcd_call(replica) -> None:
    cache = replica.service.cache
    # The cache's watch starts in the background and delivers the writes made
    # while the replica started (its page-token key): each counts as contact.
    # Let them all land first, or one landing after the clock moves resets it.
    base = cache.keys.base.encode()
    written = await replica.store.range(base, prefix_end(base))
    await cache.wait_for_revision(max((kv.mod_revision for kv in written.kvs), default=0))
    clock = VirtualClock(1000.0)
    cache.store._clock = clock  # a virtual clock from here on
    cache.store.touch()
    clock.advance(30.0)
    stale = await replica.stub.ListEvaluations(state_pb2.ListEvaluationsRequest(
        query=query_pb2.QueryOptions(stale=True)))
    assert stale.meta.last_contact.ToTimedelta().total_seconds() == pytest.approx(30.0)
    assert not stale.meta.known_leader
    fresh = await replica.stub.ListEvaluations(state_pb2.ListEvaluationsRequest())
    assert fresh.meta.last_contact.ToTimedelta().total_seconds() == 0  # the sync's Get
    assert fresh.meta.known_leader


async def test_a_bounded_stale_read_past_its_bound_proves_contact_on_a_healthy_replica(
        replica) -> None:
    cache = replica.service.cache
    clock = VirtualClock(1000.0)
    cache.store._clock = clock
    cache.store.touch()
    clock.advance(30.0)  # silent for 30 s, but etcd is there
    req = state_pb2.ListEvaluationsRequest()
    req.query.max_stale.FromSeconds(5)
    got = await replica.stub.ListEvaluations(req)
    assert got.meta.last_contact.ToTimedelta().total_seconds() == 0  # the proof's Get
    within = state_pb2.ListEvaluationsRequest()
    within.query.max_stale.FromSeconds(5)
    clock.advance(2.0)
    got = await replica.stub.ListEvaluations(within)  # within the bound: served as it is
    assert got.meta.last_contact.ToTimedelta().total_seconds() == pytest.approx(2.0)


async def test_an_identical_re_create_is_ok_whatever_its_status(replica) -> None:
    """A terminal evaluation written by the leader, created again unfenced
    exactly as stored (a client's retried create), is OK with nothing
    written; a different terminal one under its id, or a new terminal one,
    still needs the leader's fence."""
    stub, store = replica.stub, replica.store
    done = evaluation_pb2.Evaluation(id="t1", type="service", job_id="j", status=COMPLETE)
    first = await stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(evaluations=[done]),
                                         metadata=await _leader_fence(replica))
    before = await store.revision()
    again = await stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(
        evaluations=[done]))
    assert again.eval_ids == ["t1"] and again.index >= first.index
    assert await store.revision() == before
    changed = evaluation_pb2.Evaluation(id="t1", type="service", job_id="j", status=COMPLETE,
                                        priority=90)
    new = evaluation_pb2.Evaluation(id="t2", type="service", job_id="j", status=COMPLETE)
    pre = grpc.StatusCode.FAILED_PRECONDITION
    for ev in (changed, new):
        await _expect(stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(
            evaluations=[ev])), pre, "FENCE_REQUIRED")
    await _expect(stub.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(
        evaluations=[done, new])), pre, "FENCE_REQUIRED")
    assert await store.revision() == before
