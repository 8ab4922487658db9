"""The StateService gRPC servicer: the RPC groups composed into one class.

Every Get/List/Count comes from :class:`~drover.state.queries.QueriesRpc`
(one row of :data:`drover.state.core.query_specs.QUERIES` each); the other groups
hold the writes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from drover.api.state.v1 import state_pb2_grpc
from drover.rpc.encoded import with_encoded
from drover.state.deployment_update import DeploymentUpdateRpc
from drover.state.eval_update import EvaluationUpdateRpc
from drover.state.evaluations import EvaluationsRpc
from drover.state.gc import GarbageCollectRpc
from drover.state.jobs import JobsRpc
from drover.state.node_status import NodeStatusRpc
from drover.state.objects import ObjectsRpc
from drover.state.plans import PlansRpc
from drover.state.queries import QueriesRpc
from drover.state.subscribe import Hub

#: Adds the servicer to a server; Subscribe's responses arrive serialized
#: (each event is encoded once per change for every subscriber, see
#: :mod:`drover.state.subscribe`).
add_state_servicer = with_encoded(state_pb2_grpc.add_StateServiceServicer_to_server,
                                  ("Subscribe",))


class StateServicer(
    QueriesRpc,
    JobsRpc,
    EvaluationsRpc,
    EvaluationUpdateRpc,
    ObjectsRpc,
    DeploymentUpdateRpc,
    GarbageCollectRpc,
    NodeStatusRpc,
    PlansRpc,
    state_pb2_grpc.StateServiceServicer,
):
    hub: Hub

    def attach_hub(self, hub: Hub) -> None:
        self.hub = hub

    async def Subscribe(  # type: ignore[override]
        self, request: Any, context: Any
    ) -> AsyncIterator[bytes]:
        async for resp in self.hub.subscribe(request):
            yield resp
