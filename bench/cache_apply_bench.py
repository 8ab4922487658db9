"""The state cache's CPU per watched event, in the broker pipeline's shape.

In-process, no etcd: a table of ``--preload`` evaluations (complete, as a
pipeline's history), then rounds of 100 new pending evaluations (one
UpsertEvaluations) and their acks (status complete), applied through
:meth:`drover.state.core.tables.Tables.apply` as the cache applies watched
events, and each change encoded once for Subscribe
(:func:`drover.state.subscribe.event_chunk`). Reports process CPU per event
(the best and the 25th percentile of chunks: steadier than wall time on a
shared machine). Run it from two trees to A/B a change of the cache's
per-event cost; the pipeline's own figure is ``broker_bench.py``'s
per-process CPU per evaluation (two events per evaluation).

``--expected``: the puts are this replica's own writes, as on the broker
pipeline: each is told to the tables while "planned"
(:meth:`~drover.state.core.tables.Tables.expect_put`, timed apart as
``expect_us_per_event``: the planner's share) before its event is applied
(decode once: the apply then parses neither key nor value).
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
import uuid

from drover.api.types.v1.evaluation_pb2 import Evaluation, EvaluationStatus
from drover.coord.keys import Keyspace
from drover.state import subscribe
from drover.state.cache import Change
from drover.state.core import codec
from drover.state.core.tables import Tables

Event = tuple[bytes, bytes, int, int, bool]
PENDING = EvaluationStatus.EVALUATION_STATUS_PENDING
COMPLETE = EvaluationStatus.EVALUATION_STATUS_COMPLETE


class _KV:
    __slots__ = ("create_revision", "key", "mod_revision", "value")

    def __init__(self, key: bytes, value: bytes, create: int, mod: int) -> None:
        self.key, self.value, self.create_revision, self.mod_revision = key, value, create, mod


def _eval(run: str, i: int, status: EvaluationStatus) -> Evaluation:
    e = Evaluation(id=f"{run}-{i}", namespace="default", priority=50, type="service",
                   job_id=f"{run}-job{i}", status=status, triggered_by="job-register")
    e.create_time.seconds = e.modify_time.seconds = 1_700_000_000
    return e


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preload", type=int, default=60_000)
    ap.add_argument("--rounds", type=int, default=300, help="rounds of 100 creates + 100 acks")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--expected", action="store_true",
                    help="tell the tables each put first, as this replica's writes do")
    args = ap.parse_args()
    keys = codec.KeyCodec(Keyspace("/bench/drover"))
    tables = Tables(keys)
    run, rev = uuid.uuid4().hex[:6], 10
    listed = []
    for i in range(args.preload):
        rev += 1
        e = _eval(run, i, COMPLETE)
        listed.append(_KV(keys.key(codec.EVALUATIONS, "default", e.id), e.SerializeToString(),
                          rev, rev))
    listed.sort(key=lambda kv: kv.key)
    tables.stage(listed)
    tables.load_staged()
    tables.advance(rev)
    gc.freeze()
    run = uuid.uuid4().hex[:6]
    batches: list[list[Event]] = []
    messages: list[list[Evaluation]] = []
    for r in range(args.rounds):
        base, puts, acks = rev, [], []
        created, acked = [], []
        for i in range(r * 100, r * 100 + 100):
            rev += 1
            e = _eval(run, i, PENDING)
            created.append(e)
            puts.append((keys.key(codec.EVALUATIONS, "default", e.id), e.SerializeToString(),
                         rev, rev, False))
        for n, i in enumerate(range(r * 100, r * 100 + 100)):
            rev += 1
            e = _eval(run, i, COMPLETE)
            acked.append(e)
            acks.append((keys.key(codec.EVALUATIONS, "default", e.id), e.SerializeToString(),
                         base + 1 + n, rev, False))
        batches += [puts, acks]
        messages += [created, acked]

    chunk = 20  # batches per timed chunk
    apply_s: list[float] = []
    expect_s: list[float] = []
    changes: list[list[Change]] = []
    for k in range(0, len(batches), chunk):
        if args.expected:
            t0 = time.process_time()
            for batch, msgs in zip(batches[k:k + chunk], messages[k:k + chunk], strict=True):
                for (k_, v_, *_), m in zip(batch, msgs, strict=True):
                    tables.expect_put(k_, v_, codec.EVALUATIONS, "default", m.id, m)
            expect_s.append((time.process_time() - t0) / sum(map(len, batches[k:k + chunk])))
        t0 = time.process_time()
        for batch in batches[k:k + chunk]:
            applied = []
            for key, value, create, mod, deleted in batch:
                got = tables.apply(key, value, create, mod, deleted)
                assert got is not None
                ok = got[0]
                applied.append(Change(ok.kind, ok.namespace, ok.id, mod, deleted, value, create))
            changes.append(applied)
        apply_s.append((time.process_time() - t0) / sum(map(len, batches[k:k + chunk])))
    encode_s: list[float] = []
    for k in range(0, len(changes), chunk):
        t0 = time.process_time()
        for cs in changes[k:k + chunk]:
            for c in cs:
                subscribe.event_chunk(c)
        encode_s.append((time.process_time() - t0) / sum(map(len, changes[k:k + chunk])))
    apply_s.sort()
    encode_s.sort()
    expect_s.sort()
    out: dict[str, object] = {
        "expected": args.expected,
        "expect_us_per_event": expect_s[0] * 1e6 if expect_s else 0.0,
        "preload": args.preload, "events": sum(map(len, batches)),
        "apply_us_per_event": apply_s[0] * 1e6,
        "apply_us_per_event_p25": apply_s[len(apply_s) // 4] * 1e6,
        "encode_us_per_event": encode_s[0] * 1e6,
        "encode_us_per_event_p25": encode_s[len(encode_s) // 4] * 1e6,
    }
    if args.json:
        print(json.dumps(out, sort_keys=True))
    else:
        for name, figure in out.items():
            print(f"{name:28} {figure:10.2f}" if isinstance(figure, float)
                  else f"{name:28} {figure}", file=sys.stdout)


if __name__ == "__main__":
    main()
