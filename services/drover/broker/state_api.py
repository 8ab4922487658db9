"""The broker's seam to the state service: exactly the calls it makes.

:class:`BrokerStateApi` is the Protocol the shell depends on (the consumer
owns the seam); :class:`GrpcStateApi` implements it on a state-service
channel. Reads are consistent (never ``stale``), so the first read after
winning the election is a barrier past everything the old leader wrote.
Writes carry the leader's fence as ``drover-fence`` metadata: a deposed
leader's write fails inside etcd with FENCE_LOST, whatever it believes.

State-service failures come back as the :mod:`drover.errors` class the
broker acts on: :class:`FenceLost` (end the term), :class:`Conflict`
(retry), :class:`ResyncNeeded` (the event stream cannot continue from our
index: re-read and subscribe again), an outcome state did not apply as it
came (:class:`~drover.errors.EvaluationGone`, ``EvaluationChanged``,
``EvaluationExists``: the worker sees what state said), an
``InvalidArgument`` for a worker's malformed follow-up, and
:class:`~drover.errors.Unavailable` otherwise.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol

import grpc

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import evaluation_pb2, scheduler_pb2
from drover.broker.errors import ResyncNeeded
from drover.coord.fence import Fence
from drover.errors import (
    Conflict,
    DroverError,
    EvaluationChanged,
    EvaluationExists,
    EvaluationGone,
    FenceLost,
    InvalidArgument,
    NotFound,
)
from drover.remote_errors import narrow
from drover.rpc.remote import from_rpc_error
from drover.rpc.replicas import ReplicaPool
from drover.rpc.resume import subscribe_resumed

__all__ = ["BrokerStateApi", "EvalPage", "GrpcStateApi", "translate"]

# What the broker holds: everything not terminal.
HELD_FILTER = 'status == "pending" || status == "blocked"'
TOPICS = (state_pb2.TOPIC_EVALUATION, state_pb2.TOPIC_SCHEDULER_CONFIG)
# Only a compacted index needs a re-read; a too-slow subscriber resumes.
_RESYNC_REASONS = frozenset({"INDEX_COMPACTED"})

#: The state service's answers to an outcome it did not apply, passed on as
#: they are so a worker sees what state said (nothing was written).
_OUTCOME_REFUSED = (EvaluationGone, EvaluationChanged, EvaluationExists)

EvalPage = tuple[list[evaluation_pb2.Evaluation], str, int]


class BrokerStateApi(Protocol):
    async def list_held(self, page_token: str, page_size: int) -> EvalPage:
        """One page of non-terminal evaluations: (evaluations, next token, index)."""
        ...

    async def eval_index(self) -> int:
        """The evaluation table's index after a consistent read (the barrier)."""
        ...

    async def scheduler_config(self) -> scheduler_pb2.SchedulerConfig: ...

    def subscribe(self, from_index: int) -> AsyncIterator[state_pb2.SubscribeResponse]: ...

    async def update(
        self, updates: Sequence[evaluation_pb2.Evaluation],
        creates: Sequence[evaluation_pb2.Evaluation], fence: Fence,
    ) -> int:
        """Update held evaluations (compared on modify_index) and create new
        ones, in one fenced txn; never create-or-update."""
        ...


    async def reap_missed_heartbeats(
            self, fence: Fence) -> state_pb2.ReapMissedHeartbeatsResponse:
        """Have the state service mark down the ready nodes whose heartbeat
        lease expired (fenced: only this term's leader may)."""
        ...


def translate(err: grpc.RpcError) -> DroverError:
    """The drover error a state-service failure stands for, narrowed to
    what the broker acts on (decoded by :func:`drover.rpc.remote.from_rpc_error`)."""
    remote = from_rpc_error(err)
    if isinstance(remote, _OUTCOME_REFUSED):
        return remote
    if remote.reason in _RESYNC_REASONS:
        return ResyncNeeded(f"state event stream: {remote.reason}: {remote.message}",
                            metadata=remote.metadata)
    if isinstance(remote, InvalidArgument):
        # A worker's malformed follow-up: the worker's fault, said as such.
        return InvalidArgument(f"the state service refused it: {remote.message}",
                               metadata={**remote.metadata, "state_reason": remote.reason})
    return narrow(remote, (FenceLost, Conflict, NotFound), "state service")


class GrpcStateApi:
    """:class:`BrokerStateApi` over every state replica (:class:`ReplicaPool`).

    Reads go to the next replica and move on to another when one is down
    or does not answer in time (reads are safe to repeat); a write is one
    attempt on the next replica (an unknown outcome is never repeated
    here: the writer decides), and a replica it failed on is held down so
    the next write goes elsewhere. The Subscribe feed is resumed on another
    replica from the last index delivered when its replica fails or stays
    silent past the hold (:func:`drover.rpc.resume.subscribe_resumed`).
    """

    def __init__(self, replicas: ReplicaPool, *, timeout: float = 10.0) -> None:
        self.replicas = replicas
        self._timeout = timeout

    async def list_held(self, page_token: str, page_size: int) -> EvalPage:
        req = state_pb2.ListEvaluationsRequest(
            namespace="*", filter=HELD_FILTER, page_size=page_size, page_token=page_token)
        try:
            resp = await self.replicas.read(
                lambda stub: stub.ListEvaluations(req, timeout=self._timeout * 3))
        except grpc.RpcError as err:
            raise translate(err) from err
        return list(resp.evaluations), resp.next_page_token, resp.meta.index

    async def eval_index(self) -> int:
        req = state_pb2.ListEvaluationsRequest(namespace="*", page_size=1)
        try:
            resp = await self.replicas.read(
                lambda stub: stub.ListEvaluations(req, timeout=self._timeout))
        except grpc.RpcError as err:
            raise translate(err) from err
        return int(resp.meta.index)

    async def scheduler_config(self) -> scheduler_pb2.SchedulerConfig:
        req = state_pb2.GetSchedulerConfigRequest()
        try:
            resp = await self.replicas.read(
                lambda stub: stub.GetSchedulerConfig(req, timeout=self._timeout))
        except grpc.RpcError as err:
            raise translate(err) from err
        return resp.config

    async def subscribe(self, from_index: int) -> AsyncIterator[state_pb2.SubscribeResponse]:
        req = state_pb2.SubscribeRequest(topics=TOPICS, from_index=from_index)
        try:
            async for resp in subscribe_resumed(self.replicas, req):
                yield resp
        except grpc.RpcError as err:
            raise translate(err) from err

    async def update(
        self, updates: Sequence[evaluation_pb2.Evaluation],
        creates: Sequence[evaluation_pb2.Evaluation], fence: Fence,
    ) -> int:
        req = state_pb2.UpdateEvaluationsRequest(updates=updates, creates=creates)
        try:
            resp = await self.replicas.once(lambda stub: stub.UpdateEvaluations(
                req, metadata=fence.metadata(), timeout=self._timeout))
        except grpc.RpcError as err:
            raise translate(err) from err
        return int(resp.index)

    async def reap_missed_heartbeats(
            self, fence: Fence) -> state_pb2.ReapMissedHeartbeatsResponse:
        req = state_pb2.ReapMissedHeartbeatsRequest()
        try:
            return await self.replicas.once(lambda stub: stub.ReapMissedHeartbeats(
                req, metadata=fence.metadata(), timeout=self._timeout * 3))
        except grpc.RpcError as err:
            raise translate(err) from err
