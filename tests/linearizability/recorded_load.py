"""Recorded clients for a fault scenario, and the check of their history.

:class:`RecordedClients` runs job clients (registers with compare-and-set:
models.JOBS) and evaluation clients (create, status transitions, reads:
models.EVALUATIONS) on one channel until cancelled, then
:meth:`RecordedClients.judge` checks both histories and says what it cost.

The checker's cost is kept bounded by the per-key concurrency: each job
is written and read by two clients only (client ``i`` owns jobs ``i`` and
``i + 1``), each evaluation by its creator, its acker and one reader, and
a key's clients move on to a fresh job once a write of it ended unknown
(:meth:`JobClients.key_now`). So a key never has
more than a handful of operations open at once, whatever the length of
the run: the search is linear in the history's length times a constant
set by that bound (:attr:`Figures.max_open`).
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass

import grpc

from drover.api.broker.v1 import broker_pb2_grpc
from drover.api.state.v1 import state_pb2_grpc
from drover.tasks import cancel_and_wait
from linearizability.checker import Operation, check
from linearizability.eval_clients import EvalClients
from linearizability.history import History
from linearizability.job_clients import JobClients
from linearizability.models import EVALUATIONS, JOBS

#: Run for at most this long (the scenario cancels the clients first).
FOREVER = 24 * 3600.0


@dataclass(frozen=True)
class Figures:
    """What one history and its check came to."""

    what: str
    operations: int
    unknown: int
    keys: int
    #: Most operations of one key open at one instant (unknown ones open to the end).
    max_open: int
    steps: int
    seconds: float
    ok: bool
    #: Operations by kind (write, cas, read; create, ack, read).
    kinds: str = ""

    def line(self) -> str:
        return (f"{self.what}: {self.operations} operations ({self.kinds}; "
                f"{self.unknown} unknown) on "
                f"{self.keys} keys, at most {self.max_open} open on one key, "
                f"{self.steps} search steps in {self.seconds:.2f}s: "
                + ("linearizable" if self.ok else "NOT linearizable"))


def max_open(ops: Iterable[Operation]) -> int:
    """The most operations of one key that overlap in time."""
    by_key: dict[Hashable, list[tuple[float, int]]] = {}
    for o in ops:
        edges = by_key.setdefault(o.key, [])
        edges += [(o.call, 1), (o.ret if o.ret != math.inf else math.inf, -1)]
    most = 0
    for edges in by_key.values():
        now = 0
        for _, step in sorted(edges, key=lambda e: (e[0], e[1])):
            now += step
            most = max(most, now)
    return most


class RecordedClients:
    def __init__(self, rng: random.Random, *, job_clients: int = 4,
                 eval_clients: int = 3) -> None:
        self.jobs = History()
        self.evals = History()
        self.n_jobs = job_clients
        self.job_clients = JobClients(self.jobs, [f"lin-{i}" for i in range(job_clients)],
                                      random.Random(rng.random()), pause=0.1)
        self.eval_clients = EvalClients(self.evals, random.Random(rng.random()),
                                        eval_clients, pause=0.1)
        self._tasks: list[asyncio.Task[None]] = []
        self._stopper: asyncio.Task[None] | None = None

    def start(self, ch: grpc.aio.Channel, running: Callable[[], bool] = lambda: True) -> None:
        """Start the clients on ``ch``; they stop when ``running()`` turns false."""
        state = state_pb2_grpc.StateServiceStub(ch)
        broker = broker_pb2_grpc.EvalBrokerServiceStub(ch)
        keys = self.job_clients.keys
        self._tasks = [asyncio.create_task(self.job_clients.run_client(
            i, state, FOREVER, keys=[keys[i], keys[(i + 1) % self.n_jobs]], bounded=True))
            for i in range(self.n_jobs)]
        self._tasks += [asyncio.create_task(self.eval_clients.run_client(i, state, broker,
                                                                        FOREVER))
                        for i in range(self.eval_clients.clients)]
        self._stopper = asyncio.create_task(self._stop_when(running))

    async def _stop_when(self, running: Callable[[], bool]) -> None:
        while running():  # noqa: ASYNC110 (a plain flag: the driver's)
            await asyncio.sleep(0.2)
        await cancel_and_wait(self._tasks, within=10.0, what="recorded clients")

    async def stop(self) -> None:
        stopper = [self._stopper] if self._stopper is not None else []
        await cancel_and_wait([*self._tasks, *stopper], within=10.0,
                              what="recorded clients")
        self.jobs.close()
        self.evals.close()

    def judge(self) -> tuple[list[str], list[Figures]]:
        """(problems, figures) of both histories."""
        problems: list[str] = []
        figures = []
        for what, history, model in (("jobs", self.jobs, JOBS),
                                     ("evaluations", self.evals, EVALUATIONS)):
            t0 = time.monotonic()
            result = check(model, history.ops)
            ops = history.ops
            fig = Figures(what, len(ops), sum(1 for o in ops if o.unknown),
                          len({o.key for o in ops}), max_open(ops), result.explored,
                          time.monotonic() - t0, result.ok,
                          ", ".join(f"{k} {n}" for k, n in sorted(Counter(
                              o.input[0] for o in ops).items())))
            figures.append(fig)
            print(fig.line())
            if not ops:
                problems.append(f"no {what} operation was recorded")
            if not result.ok:
                refused = [f"  {line}" for key in result.bad_keys
                           for line in self.eval_clients.refused.get(str(key), [])]
                problems.append(f"{what} history not linearizable:\n" + result.report(model)
                                + ("\n  acks answered as not written (left out):\n"
                                   + "\n".join(refused) if refused else ""))
        return problems, figures
