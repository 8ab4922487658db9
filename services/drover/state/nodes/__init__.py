"""The nodes family.

Reads: GetNode, ListNodes (rows of :data:`drover.state.core.query_specs.QUERIES`).
Writes: :mod:`.rpcs` (UpsertNode: registration), :mod:`.status`
(UpdateNodeStatus, HeartbeatNodes, ReapMissedHeartbeats), :mod:`.drain`
(UpdateNodeDrain, UpdateAllocDesiredTransition) and :mod:`.liveness`
(heartbeats as etcd lease keepalives; missed ones marked down). Planned by
:mod:`.core.nodes`, :mod:`.core.drain` and :mod:`.core.liveness`; a
client's node secret is checked by :mod:`.core.node_secret`. Whether a
node may take work is :mod:`drover.scheduling.eligibility`.
"""
