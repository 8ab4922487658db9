"""drover under etcd member faults (issue #20's table, re-measured).

A real three-member etcd on loopback, one state service and two brokers
(``drover serve``, all given the three endpoints and pinned to member 0), a
writer at 20 evaluations/s and four workers (Dequeue + Ack). For each fault:
the longest gap in successful writes and in Dequeues that handed out an
evaluation, failed writes (OUTCOME_UNKNOWN among them), broker leadership
changes, and evaluations lost or acked twice. See
:mod:`drover.dev.etcd_drill`.

    .venv/bin/python bench/etcd_faults.py [--json] [--fault-seconds 10]
        [--session-ttl N] [--faults kill-leader,stop-follower-in-use]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys

from drover.dev.etcd_drill import FAULTS, Drill, DrillConfig, FaultResult


def table(rows: list[FaultResult], cfg: DrillConfig) -> str:
    ttl = cfg.session_ttl or "default (10)"
    out = [f"session TTL {ttl} s; fault held {cfg.fault_seconds:g} s; "
           f"writer {cfg.write_rate:g}/s, {cfg.workers} workers",
           "| fault | writes stopped | Dequeue stopped | writes failed (unknown) "
           "| broker leader changes | lost | acked twice | held for redelivery |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r.fault} | {r.write_gap:.2f} s | {r.dequeue_gap:.2f} s "
                   f"| {r.writes_failed} ({r.outcome_unknown}) of {r.writes + r.writes_failed} "
                   f"| {r.leader_changes} | {r.lost} | {r.duplicates} | {r.held} |")
    return "\n".join(out)


async def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", action="store_true")
    p.add_argument("--fault-seconds", type=float, default=10.0)
    p.add_argument("--session-ttl", type=int, default=None)
    p.add_argument("--faults", default=",".join(FAULTS))
    args = p.parse_args()
    cfg = DrillConfig(session_ttl=args.session_ttl, fault_seconds=args.fault_seconds)
    rows: list[FaultResult] = []

    def log(message: str) -> None:
        print(message, file=sys.stderr)

    async with Drill(cfg, log=log) as drill:
        for key in args.faults.split(","):
            rows.append(await drill.run(key))
            log(table(rows[-1:], cfg).splitlines()[-1])
    if args.json:
        print(json.dumps({"config": dataclasses.asdict(cfg),
                          "rows": [dataclasses.asdict(r) for r in rows]}, indent=2))
    else:
        print(table(rows, cfg))
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
