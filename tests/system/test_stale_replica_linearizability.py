"""Recorded histories of real processes, checked for linearizability.

Two `drover serve state` replicas on one etcd; one is deliberately broken
(:mod:`state_stale_replica`: no consistent-read wait, its watch applied
0.5 s late). Clients write jobs
(blind writes and compare-and-sets) through the good replica and read
them through one replica or the other, at the same time, on separate
jobs: the history read through the good replica is linearizable, the one
read through the broken replica is not (a read that misses a write that
had completed before it began)."""

from __future__ import annotations

import asyncio
import os
import pathlib
import random

import grpc
import pytest
from linearizability import History, check
from linearizability.job_clients import JobClients
from linearizability.models import JOBS
from service_procs import serve

from drover.api.state.v1 import state_pb2_grpc

TESTS = str(pathlib.Path(__file__).resolve().parents[1])

pytestmark = pytest.mark.slow

SECONDS = 3.0


async def test_a_replica_serving_stale_reads_fails_the_checker(
        etcd_endpoint: str, etcd_prefix: str) -> None:
    with serve("state", etcd_endpoint, etcd_prefix) as good, \
            serve("state", etcd_endpoint, etcd_prefix,
                  env={"PYTHONPATH": os.pathsep.join([TESTS, os.environ.get("PYTHONPATH", "")])},
                  launcher=("state_stale_replica", "0.5")) as bad:
        async with grpc.aio.insecure_channel(good) as g, grpc.aio.insecure_channel(bad) as b:
            via_good = state_pb2_grpc.StateServiceStub(g)
            via_bad = state_pb2_grpc.StateServiceStub(b)
            for ch in (g, b):
                await asyncio.wait_for(ch.channel_ready(), 30)
            correct, broken = History(), History()
            ok_clients = JobClients(correct, ["lin-good-0", "lin-good-1"], random.Random(1))
            bad_clients = JobClients(broken, ["lin-bad-0", "lin-bad-1"], random.Random(2))
            await asyncio.gather(
                ok_clients.run_client(0, via_good, SECONDS, reads=False),
                ok_clients.run_client(1, via_good, SECONDS, writes=False),
                ok_clients.run_client(2, via_good, SECONDS),
                bad_clients.run_client(0, via_good, SECONDS, reads=False),
                bad_clients.run_client(1, via_bad, SECONDS, writes=False),
                bad_clients.run_client(2, via_bad, SECONDS, writes=False),
            )
    for h in (correct, broken):
        h.close()
        assert h.counts()["ok"] > 40, h.counts()
    good_result = check(JOBS, correct.ops)
    assert good_result.ok, good_result.report(JOBS)
    bad_result = check(JOBS, broken.ops)
    assert not bad_result.ok, (
        f"stale reads passed the checker: {broken.counts()} operations recorded")
    print(f"correct replica: {correct.counts()} linearizable; stale replica: "
          f"{broken.counts()}, not linearizable on {sorted(map(str, bad_result.bad_keys))}")
