"""Clients that record a history of evaluations (models.EVALUATIONS) through
real drover services: creates (UpsertEvaluations, unfenced), identical
re-creates, status transitions (Dequeue, then Ack with an outcome: the
broker writes it to the state before answering) and reads (GetEvaluation).

The evaluations are of a scheduler type only these clients dequeue
(:data:`SCHEDULER`), each for a job of its own that nothing else knows, so
no other writer moves them. Per-key concurrency is bounded: an evaluation is created by one
client, acked by the one its delivery went to, and read by its creator and
one neighbour; a client stops touching an evaluation once a call on it
ended unknown (an unknown operation stays open to the end of the history,
and each one open multiplies the checker's search).

Outcomes: a create refused FENCE_REQUIRED observed a different evaluation
(ok, ``False``); an Ack refused before anything was written (the reasons in
:data:`ACK_NOT_WRITTEN`) did not happen (fail); a create refused before
writing likewise; anything else unanswered may have happened (info). A
failed read is left out.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from dataclasses import dataclass, field

import grpc

from drover.api.broker.v1 import broker_pb2, broker_pb2_grpc
from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import evaluation_pb2
from drover.rpc.remote import error_info
from linearizability.history import History

SCHEDULER = "lin-evals"
PENDING = evaluation_pb2.EVALUATION_STATUS_PENDING
OUTCOMES = (evaluation_pb2.EVALUATION_STATUS_COMPLETE, evaluation_pb2.EVALUATION_STATUS_FAILED)
#: Reasons that prove a create was refused before anything was written.
CREATE_NOT_WRITTEN = {"ETCD_UNAVAILABLE", "INVALID_ARGUMENT"}
#: Reasons that prove an Ack's outcome was not written.
ACK_NOT_WRITTEN = {"UNKNOWN_EVALUATION", "NOT_OUTSTANDING", "TOKEN_EXPIRED", "TOKEN_MISMATCH",
                   "BROKER_DISABLED", "NOT_LEADER", "EVALUATION_GONE", "EVALUATION_CHANGED",
                   "FENCE_LOST", "ETCD_UNAVAILABLE", "INVALID_ARGUMENT"}


def lin_eval(eval_id: str) -> evaluation_pb2.Evaluation:
    """A pending evaluation with a job of its own: the broker cancels the
    older of two evaluations of one job, a writer these clients do not model."""
    return evaluation_pb2.Evaluation(
        id=eval_id, namespace="default", type=SCHEDULER, job_id=f"lin-eval-{eval_id}",
        triggered_by="job-register", status=PENDING, priority=50)


def _reason(err: grpc.aio.AioRpcError) -> str:
    info = error_info(err)
    return info.reason if info else ""


@dataclass
class EvalClients:
    """Client ``i`` reads its own evaluations and client ``i - 1``'s."""

    history: History
    rng: random.Random
    clients: int
    timeout: float = 3.0
    pause: float = 0.05
    #: Evaluations each client created (and may still touch).
    created: dict[int, list[str]] = field(default_factory=dict)
    #: Evaluations a client no longer touches (a call on it ended unknown).
    retired: set[tuple[int, str]] = field(default_factory=set)
    #: Acks answered as not written, by evaluation: (client, status, code
    #: and reason). Left out of the history, so a judge that finds a key
    #: wrong can still say what each of its refused acks was told.
    refused: dict[str, list[str]] = field(default_factory=dict)

    def _usable(self, client: int, eval_id: str) -> bool:
        return (client, eval_id) not in self.retired

    def _unknown(self, client: int, eval_id: str, handle: int) -> None:
        self.history.info(handle)
        self.retired.add((client, eval_id))

    async def create(self, client: int, state: state_pb2_grpc.StateServiceStub,
                     eval_id: str) -> None:
        h = self.history.invoke(client, eval_id, ("create", PENDING))
        try:
            await state.UpsertEvaluations(state_pb2.UpsertEvaluationsRequest(
                evaluations=[lin_eval(eval_id)]), timeout=self.timeout)
        except grpc.aio.AioRpcError as err:
            reason = _reason(err)
            if reason == "FENCE_REQUIRED":
                self.history.ok(h, False)
            elif reason in CREATE_NOT_WRITTEN or err.code() == grpc.StatusCode.INVALID_ARGUMENT:
                self.history.fail(h)
            else:
                self._unknown(client, eval_id, h)
            return
        self.history.ok(h, True)

    async def dequeue_ack(self, client: int, broker: broker_pb2_grpc.EvalBrokerServiceStub
                          ) -> None:
        req = broker_pb2.DequeueRequest(schedulers=[SCHEDULER])
        req.timeout.FromMilliseconds(300)
        try:
            got = await broker.Dequeue(req, timeout=self.timeout)
        except grpc.aio.AioRpcError:
            return  # a dequeue changes no stored state: not in the history
        if not got.token:
            return
        eval_id, status = got.evaluation.id, self.rng.choice(OUTCOMES)
        h = self.history.invoke(client, eval_id, ("ack", status))
        try:
            await broker.Ack(broker_pb2.AckRequest(eval_id=eval_id, token=got.token,
                                                   status=status), timeout=self.timeout)
        except grpc.aio.AioRpcError as err:
            if _reason(err) in ACK_NOT_WRITTEN:
                self.history.fail(h)
                self.refused.setdefault(eval_id, []).append(
                    f"client {client}: ack {status} refused {err.code().name} {_reason(err)}: "
                    f"{err.details()}")
            else:
                self._unknown(client, eval_id, h)
            return
        self.history.ok(h, True)

    async def read(self, client: int, state: state_pb2_grpc.StateServiceStub,
                   eval_id: str) -> None:
        h = self.history.invoke(client, eval_id, ("read",))
        try:
            resp = await state.GetEvaluation(state_pb2.GetEvaluationRequest(
                namespace="default", id=eval_id), timeout=self.timeout)
        except grpc.aio.AioRpcError as err:
            if err.code() == grpc.StatusCode.NOT_FOUND:
                self.history.ok(h, None)
            else:
                self.history.fail(h)
            return
        self.history.ok(h, resp.evaluation.status)

    def _readable(self, client: int) -> list[str]:
        mine = self.created.get(client, [])[-8:]
        neighbour = self.created.get((client - 1) % self.clients, [])[-8:]
        return [e for e in (*mine, *neighbour) if self._usable(client, e)]

    async def run_client(self, client: int, state: state_pb2_grpc.StateServiceStub,
                         broker: broker_pb2_grpc.EvalBrokerServiceStub, seconds: float) -> None:
        loop = asyncio.get_running_loop()
        end = loop.time() + seconds
        mine = self.created.setdefault(client, [])
        while loop.time() < end:
            r = self.rng.random()
            readable = self._readable(client)
            if r < 0.25 or not readable:
                eval_id = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
                mine.append(eval_id)
                await self.create(client, state, eval_id)
            elif r < 0.35:  # the same create again (a client's retry)
                again = [e for e in mine[-8:] if self._usable(client, e)]
                if again:
                    await self.create(client, state, self.rng.choice(again))
            elif r < 0.65:
                await self.dequeue_ack(client, broker)
            else:
                await self.read(client, state, self.rng.choice(readable))
            await asyncio.sleep(self.rng.uniform(0, self.pause))
