"""The state service's write path per evaluation, in process (no gRPC, no etcd).

    .venv/bin/python bench/state_write_bench.py [--rounds 200] [--json]

What the broker pipeline makes the state do per evaluation, minus the RPC
and etcd round trips: UpsertEvaluations of 100 new evaluations (as the
broker bench enqueues them) and UpdateEvaluations of 127 acks (the broker's
outcome: each evaluation as handed out, COMPLETE, compared on its
modify_index, with the leader's fence), each request parsed from bytes and
put through ``check_request`` first, as the server's interceptor does; the
handlers run on a state service over :class:`MemoryKV`. Process CPU time
(not wall: the figures hold on a shared machine), microseconds per
evaluation, best of ``--repeat`` runs; the pieces of the path are also timed
alone (``check``: check_request; ``validate``: the handler's checks;
``plan``: the planner on an empty view; ``txn_build``: the etcd TxnRequest
the plan becomes). The handler totals include the cache's own apply of the
write (the state-cache's part), which this bench does not separate.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

from aetcd import rpc
from google.protobuf.timestamp_pb2 import Timestamp

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import evaluation_pb2 as E
from drover.coord.fence import FENCE_METADATA, Fence
from drover.coord.keys import Keyspace
from drover.coord.kv import Put
from drover.coord.memkv import MemoryKV
from drover.state.app import build_on_store
from drover.state.core import codec
from drover.state.core.plan import WriteContext
from drover.state.core.validate import owned_evals, validated_eval_updates
from drover.state.evaluations.core import evals as plans
from drover.validation import check_request

try:
    from drover.coord.etcd_kv import txn_request
except ImportError:  # a tree from before it was a function
    txn_request = None  # type: ignore[assignment]


class _Context:
    """The servicer context a handler reads: the call's metadata only."""

    def __init__(self, metadata: tuple[tuple[str, str], ...] = ()) -> None:
        self._metadata = metadata

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata


class _Empty:
    """A view with nothing in it (the planners alone)."""

    revision, fresh = 1, False

    def mod(self, kind: str, ns: str, oid: str) -> int:
        return 0

    def get(self, kind: str, ns: str, oid: str) -> None:
        return None


def _evals(run: str, n: int) -> list[E.Evaluation]:
    return [E.Evaluation(id=f"{run}-{i}", namespace="default", priority=50, type="service",
                         job_id=f"{run}-job{i}", status=E.EVALUATION_STATUS_PENDING)
            for i in range(n)]


def _cpu(fn: Callable[[], Any], n: int, repeat: int) -> float:
    """Best per-call process CPU seconds of ``fn`` over ``repeat`` runs of ``n``."""
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        for _ in range(n):
            fn()
        best = min(best, (time.process_time() - t) / n)
    return best


async def handlers(rounds: int) -> dict[str, float]:
    ks = Keyspace(f"/bench{uuid.uuid4().hex[:6]}/drover")
    svc = await build_on_store(MemoryKV(), ks)
    s = svc.servicer
    leader_key = f"{ks.base}election/broker/bench"
    term = (await svc.cache.store.txn([], [Put(leader_key.encode(), b"x")])).revision
    fenced = _Context(((FENCE_METADATA, Fence(leader_key, term).header()),))
    upsert = update = 0.0
    n = 0
    try:
        for r in range(rounds):
            evs = _evals(f"r{r}", 127)
            raw = [state_pb2.UpsertEvaluationsRequest(evaluations=evs[:100]).SerializeToString(),
                   state_pb2.UpsertEvaluationsRequest(evaluations=evs[100:]).SerializeToString()]
            t = time.process_time()
            for body in raw:
                req = state_pb2.UpsertEvaluationsRequest.FromString(body)
                check_request(req)
                await s.UpsertEvaluations(req, _Context())
            upsert += time.process_time() - t
            acks = []
            table = svc.cache.tables[codec.EVALUATIONS]
            for ev in evs:  # as the broker handed it out: at its index, then COMPLETE
                entry = table.objects[f"default/{ev.id}"]
                ack = E.Evaluation()
                ack.CopyFrom(codec.decode(codec.EVALUATIONS, entry[0], 1, int(entry[1])))
                ack.status = E.EVALUATION_STATUS_COMPLETE
                acks.append(ack)
            body = state_pb2.UpdateEvaluationsRequest(updates=acks).SerializeToString()
            t = time.process_time()
            ureq = state_pb2.UpdateEvaluationsRequest.FromString(body)
            check_request(ureq)
            await s.UpdateEvaluations(ureq, fenced)
            update += time.process_time() - t
            n += len(evs)
    finally:
        await svc.close()
    return {"upsert_us": 1e6 * upsert / n, "update_us": 1e6 * update / n}


def pieces(repeat: int) -> dict[str, float]:
    evs = _evals("p", 100)
    for i, ev in enumerate(evs):
        ev.create_index, ev.modify_index = 1000 + i, 2000 + i
        ev.create_time.seconds = ev.modify_time.seconds = 1_700_000_000
    new = _evals("p", 100)
    upsert_raw = state_pb2.UpsertEvaluationsRequest(evaluations=new).SerializeToString()
    update_raw = state_pb2.UpdateEvaluationsRequest(updates=evs).SerializeToString()
    upsert = state_pb2.UpsertEvaluationsRequest.FromString(upsert_raw)
    update = state_pb2.UpdateEvaluationsRequest.FromString(update_raw)
    ctx = build_ctx()
    own = owned_evals(upsert.evaluations)
    plan = plans.plan_upsert(_Empty(), ctx, own, lambda: None)  # type: ignore[arg-type]
    out = {
        "check_upsert_us": _cpu(lambda: check_request(upsert), 50, repeat),
        "check_update_us": _cpu(lambda: check_request(update), 50, repeat),
        "validate_upsert_us": _cpu(lambda: owned_evals(upsert.evaluations), 50, repeat),
        "validate_update_us": _cpu(lambda: validated_eval_updates(update), 50, repeat),
        "plan_upsert_us": _cpu(lambda: plans.plan_upsert(
            _Empty(), ctx, own, lambda: None), 50, repeat),  # type: ignore[arg-type]
    }
    # (None in a tree from before txn_request: the A/B runs this bench there)
    build = _txn_request if txn_request is None else txn_request
    out["txn_build_us"] = _cpu(lambda: build(plan.compares, plan.ops), 50, repeat)
    return {k: 1e6 * v / 100 for k, v in out.items()}


def build_ctx() -> WriteContext:
    now = Timestamp()
    now.FromNanoseconds(time.time_ns())
    return WriteContext(codec.KeyCodec(Keyspace("/bench1234/drover")), now, lambda: "x")


def _txn_request(compares: Any, ops: Any) -> Any:
    """What EtcdKV.txn built before :func:`txn_request` (to bench a tree
    that predates it)."""
    req = rpc.TxnRequest()
    for c in compares:
        m = req.compare.add(key=c.key, result=rpc.Compare.EQUAL, target=rpc.Compare.MOD)
        m.mod_revision = c.value
    for op in ops:
        put = req.success.add().request_put
        put.key, put.value = op.key, op.value
    return req


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=200, help="127 evaluations each")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    best: dict[str, float] = {}
    for _ in range(3):
        got = asyncio.run(handlers(args.rounds))
        best = {k: min(v, best.get(k, v)) for k, v in got.items()}
    best.update(pieces(args.repeat))
    figures = {k: round(v, 2) for k, v in best.items()}
    if args.json:
        print(json.dumps(figures))
    else:
        for k, v in figures.items():
            print(f"{k:22s} {v:8.2f} us/evaluation", file=sys.stderr)


if __name__ == "__main__":
    main()
