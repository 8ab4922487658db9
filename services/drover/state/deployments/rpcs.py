"""UpdateDeployment: the deployment watcher's one atomic write (what it
writes, in one etcd txn: :mod:`drover.state.deployments.core.deployment`).

Leader only: the call must carry the watcher leader's ``drover-fence``
(FAILED_PRECONDITION ``FENCE_REQUIRED`` without one, checked before anything
is read or written), and a deposed leader's write fails with FENCE_LOST.
Planned on a synced view; a conflict (an allocation moved) re-plans, and a
conflict on the deployment itself is then the caller's to resolve
(DEPLOYMENT_CHANGED).
"""

from __future__ import annotations

from typing import Any

from drover.state.core.validate import validated_deployment_update
from drover.state.deployments.core.deployment import plan_deployment_update
from drover.state.pipeline import Caller, WriteCalls


class DeploymentUpdateRpc:
    def __init__(self, writes: WriteCalls) -> None:
        self.writes = writes

    async def update(self, request: Any, caller: Caller) -> Any:
        fence = self.writes.require_fence(caller, "UpdateDeployment")
        deployment, evs = validated_deployment_update(request)
        ctx = self.writes.write_context()
        return await self.writes.transact(
            lambda view: plan_deployment_update(view, ctx, request, deployment, evs),
            fence, sync_first=True)
