"""Paging and filtering over a million synthetic evaluations.

Builds an IndexedCollection of N lightweight records (slotted objects, not
protos) with secondary indexes on namespace, job_id, status, type and
triggered_by, then times first pages and counts through the real Paginator
and FilterCompiler. Usage: ``.venv/bin/python bench/paging_bench.py [N]``.
"""

from __future__ import annotations

import gc
import sys
import time
import uuid

from drover.filter import FieldKind, FieldType, FilterCompiler, Schema
from drover.paging import IndexedCollection, Key, PageRequest, Paginator

STATUSES = ("blocked", "pending", "complete", "failed", "canceled")
TYPES = ("service", "batch", "system", "_core")
TRIGGERS = ("job-register", "job-deregister", "deployment-watcher", "node-update")
INDEXED = ("namespace", "job_id", "status", "type", "triggered_by")


class Eval:
    __slots__ = ("create_index", "id", "job_id", "namespace", "priority", "status", "triggered_by",
                 "type")  # fmt: skip

    def __init__(self, i: int, jobs: list[str]) -> None:
        self.create_index = i
        self.id = str(uuid.UUID(int=i * 2654435761 % (1 << 128)))
        self.namespace = ("default", "prod", "staging")[i % 3]
        self.job_id = jobs[i % len(jobs)]
        self.status = STATUSES[i % 5]
        self.type = TYPES[i % 4]
        self.triggered_by = TRIGGERS[i % 4]
        self.priority = i % 100


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def timed(fn, repeat: int = 5) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main(n: int) -> None:
    string = FieldType(FieldKind.STRING)
    schema = Schema.for_attributes({
        "id": string, "namespace": string, "job_id": string,
        "status": FieldType.enum(STATUSES), "type": string, "triggered_by": string,
        "priority": FieldType(FieldKind.INT), "create_index": FieldType(FieldKind.INT),
    })  # fmt: skip
    filters = FilterCompiler(schema)
    jobs = [f"job-{j}" for j in range(10_000)]
    gc.collect()
    base = rss_bytes()
    start = time.perf_counter()
    records = [Eval(i, jobs) for i in range(1, n + 1)]
    made = time.perf_counter() - start
    records_rss = rss_bytes() - base
    coll: IndexedCollection[Eval] = IndexedCollection(
        key_of=lambda e: Key(e.create_index, e.id),
        fields={name: schema.getter(name) for name in schema.fields},
        indexed=INDEXED,
    )
    start = time.perf_counter()
    coll.load(records)
    built = time.perf_counter() - start
    index_rss = rss_bytes() - base - records_rss
    start = time.perf_counter()
    for i in range(n + 1, n + 10_001):
        coll.upsert(Eval(i, jobs))
    upsert_us = (time.perf_counter() - start) / 10_000 * 1e6

    paginator = Paginator()
    rows: list[tuple[str, str]] = [
        ("entries", f"{len(coll):,}"),
        ("make records", f"{made:.2f} s"),
        ("build indexes (load)", f"{built:.2f} s"),
        ("upsert (append, 5 indexes)", f"{upsert_us:.1f} us each"),
        ("RSS per record (slotted obj)", f"{records_rss / n:.0f} B"),
        ("RSS per entry, store + 6 indexes", f"{index_rss / n:.0f} B"),
    ]
    cases = [
        ("first page, indexed (status)", 'status == "failed"', None),
        ("first page, indexed (job_id+status)", 'job_id == "job-43" && status == "failed"', None),
        ("first page, indexed, desc", 'status == "failed"', "create_index desc"),
        ("first page, non-indexed (10%)", "priority >= 90", None),
        ("first page, non-indexed (1%)", "priority == 7 && create_index % 2 == 1", None),
        ("first page, no filter, ns scope", "", None),
    ]
    for label, expr, order in cases:
        flt = filters.compile(expr)
        req = PageRequest(method="ListEvaluations", order_by=order or "", page_size=100,
                          namespace="prod" if not expr else None)  # fmt: skip
        secs, page = timed(lambda flt=flt, req=req: paginator.page(coll, req, flt))
        rows.append((label, f"{secs * 1e3:.2f} ms ({len(page.items)} items, "  # type: ignore[attr-defined]
                            f"{page.examined} examined)"))  # type: ignore[attr-defined]  # fmt: skip
    page = paginator.page(coll, PageRequest(method="L", page_size=100),
                          filters.compile('status == "failed"'))  # fmt: skip
    req = PageRequest(method="L", page_size=100, page_token=page.next_page_token)
    secs, _ = timed(lambda: paginator.page(coll, req, filters.compile('status == "failed"')))
    rows.append(("second page via token, indexed", f"{secs * 1e3:.2f} ms"))
    for label, expr in [
        ("count, indexed (status)", 'status == "failed"'),
        ("count, indexed (status in 2 values)", 'status in ["failed", "pending"]'),
        ("count, indexed intersection", 'status == "failed" && type == "batch"'),
        ("count, indexed + namespace scope", 'status == "failed"'),
    ]:
        flt = filters.compile(expr)
        ns = "prod" if "scope" in label else None
        secs, total = timed(lambda flt=flt, ns=ns: paginator.count(coll, flt, namespace=ns))
        rows.append((label, f"{secs * 1e3:.1f} ms (= {total:,})"))
    flt = filters.compile("priority >= 90")
    secs, total = timed(lambda: paginator.count(coll, flt), repeat=1)
    rows.append(("count, non-indexed (full scan)", f"{secs:.2f} s (= {total:,})"))
    width = max(len(label) for label, _ in rows)
    print(f"{'measure':<{width}}  value")
    print("-" * (width + 40))
    for label, value in rows:
        print(f"{label:<{width}}  {value}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
