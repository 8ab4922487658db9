"""Clients that record a history of jobs as registers (models.JOBS) on
real state replicas: blind writes and compare-and-sets (RegisterJob, with
``enforce_index``) and reads (GetJob), each recorded invoke -> ok / fail /
info by how it ended.

Outcomes: a write that ended ``UNAVAILABLE ETCD_UNAVAILABLE``, or any other
refusal the server made before writing (INVALID_ARGUMENT, ...), did not
happen (fail); a CAS refused ``JOB_MODIFY_INDEX_MISMATCH`` observed another
index (ok, ``False``); anything else unanswered (a deadline, OUTCOME_UNKNOWN,
a lost connection) may have happened (info). A failed read is left out.

The jobs are batch jobs for a datacenter no node has, so nothing but these
clients ever writes them (an evaluation per write is all the rest of the
system does with them).
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field

import grpc

from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import job_pb2
from drover.rpc.remote import error_info
from linearizability.history import History

NAMESPACE = "default"
#: Reasons that prove a write was refused before anything was written.
NOT_WRITTEN = {"ETCD_UNAVAILABLE", "INVALID_ARGUMENT", "JOB_MODIFY_INDEX_MISMATCH"}


def lin_job(job_id: str, tag: str) -> job_pb2.Job:
    return job_pb2.Job(id=job_id, namespace=NAMESPACE, type=job_pb2.JOB_TYPE_BATCH,
                       datacenters=["linearizability-nowhere"], meta={"lin": tag},
                       task_groups=[job_pb2.TaskGroup(name="g", count=1)])


@dataclass
class JobClients:
    """``stubs[i]`` is client i's way in (the proxy, or one replica each)."""

    history: History
    keys: list[str]
    rng: random.Random
    timeout: float = 3.0
    #: Seconds between a client's calls (at most; drawn uniformly).
    pause: float = 0.05
    writes: int = 0
    #: Keys a client stops touching once a write of it ended unknown (with
    #: ``bounded`` runs: an unknown operation stays open to the end of the
    #: history, and each one open multiplies the checker's search).
    retired: set[tuple[int, str]] = field(default_factory=set)
    #: ``bounded`` runs: how many times each key's clients moved on from it
    #: (see :meth:`key_now`).
    generation: dict[str, int] = field(default_factory=dict)
    _seen: dict[tuple[int, str], int] = field(default_factory=dict)

    def key_now(self, key: str) -> str:
        """The job a ``bounded`` run writes for ``key`` now: ``key`` itself,
        then ``key.1``, ``key.2``, ... Once a write ended unknown, every
        client of the key moves on to its next generation, a fresh job: the
        run goes on for as long as it lasts, each job keeps at most its
        clients' operations open at once, and the unknown one stays open
        on a job nobody touches any more. (Before, a client left the key for
        good: over an hour's faults every client had left every key, and
        the soak's jobs history, and its write gaps, stopped with them.)"""
        g = self.generation.get(key, 0)
        return key if g == 0 else f"{key}.{g}"

    async def write(self, client: int, stub: state_pb2_grpc.StateServiceStub, key: str,
                    cas: bool) -> None:
        self.writes += 1
        tag = f"c{client}-{self.writes}"
        expected = self._seen.get((client, key), 0)
        inp = ("cas", expected, tag) if cas else ("write", tag)
        h = self.history.invoke(client, key, inp)
        try:
            resp = await stub.RegisterJob(state_pb2.RegisterJobRequest(
                job=lin_job(key, tag), enforce_index=cas, job_modify_index=expected if cas else 0),
                timeout=self.timeout)
        except grpc.aio.AioRpcError as err:
            info = error_info(err)
            reason = info.reason if info else ""
            if cas and reason == "JOB_MODIFY_INDEX_MISMATCH":
                self.history.ok(h, False)
            elif reason in NOT_WRITTEN or err.code() == grpc.StatusCode.INVALID_ARGUMENT:
                self.history.fail(h)
            else:
                self.history.info(h)
                self.retired.add((client, key))
            return
        self._seen[(client, key)] = resp.job_modify_index
        self.history.ok(h, resp.job_modify_index)

    async def read(self, client: int, stub: state_pb2_grpc.StateServiceStub, key: str) -> None:
        h = self.history.invoke(client, key, ("read",))
        try:
            resp = await stub.GetJob(state_pb2.GetJobRequest(namespace=NAMESPACE, id=key),
                                     timeout=self.timeout)
        except grpc.aio.AioRpcError as err:
            if err.code() == grpc.StatusCode.NOT_FOUND:
                self.history.ok(h, (0, None))
            else:
                self.history.fail(h)
            return
        self._seen[(client, key)] = resp.job.job_modify_index
        self.history.ok(h, (resp.job.job_modify_index, resp.job.meta.get("lin")))

    async def run_client(self, client: int, stub: state_pb2_grpc.StateServiceStub,
                         seconds: float, *, writes: bool = True, reads: bool = True,
                         keys: list[str] | None = None, bounded: bool = False) -> None:
        """Calls on ``keys`` (default: every key) for ``seconds``; ``bounded``:
        a key whose write ended unknown moves on to a fresh job
        (:meth:`key_now`: the per-key concurrency stays the number of
        clients on it)."""
        loop = asyncio.get_running_loop()
        end = loop.time() + seconds
        own = list(keys if keys is not None else self.keys)
        while loop.time() < end:
            base = self.rng.choice(own)
            key = self.key_now(base) if bounded else base
            r = self.rng.random()
            if writes and (not reads or r < 0.4):
                await self.write(client, stub, key, cas=self.rng.random() < 0.5)
                if bounded and (client, key) in self.retired and self.key_now(base) == key:
                    self.generation[base] = self.generation.get(base, 0) + 1
            else:
                await self.read(client, stub, key)
            await asyncio.sleep(self.rng.uniform(0, self.pause))
