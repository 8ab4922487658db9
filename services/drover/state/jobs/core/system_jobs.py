"""Evaluations of system jobs when a node can take allocations (pure).

Nomad evaluates every system job whose datacenters hold a node when the
node registers ready or becomes schedulable again (``node-update``): the
system scheduler then places the job's allocation on it
(:mod:`drover.worker.system`). The node planners call :func:`evaluate`
in the txn that changes the node, within the room the txn has left.
A node that goes down or drains needs nothing from here: its allocations
are marked lost with an evaluation of their jobs (:mod:`.nodes`).
"""

from __future__ import annotations

from drover.api.types.v1 import node_pb2
from drover.state.core import codec
from drover.state.core.plan import PlanBuilder, WriteContext
from drover.state.core.view import View
from drover.state.jobs.core.register import new_eval


def evaluate(view: View, ctx: WriteContext, plan: PlanBuilder, node: node_pb2.Node,
             room: int) -> list[str]:
    """A ``node-update`` evaluation per running system job that targets
    ``node``'s datacenter (at most ``room``); their ids."""
    ids: list[str] = []
    for nsid in view.ids(codec.JOBS, "type", "system"):
        if len(ids) >= room:
            break
        ns, _, job_id = nsid.partition("/")
        found = view.get(codec.JOBS, ns, job_id)
        if found is None or found.obj.stop:
            continue
        dcs = set(found.obj.datacenters)
        if "*" not in dcs and node.datacenter not in dcs:
            continue
        ev = new_eval(ctx, found.obj, "node-update")
        ev.node_id = node.id
        ev.job_modify_index = found.obj.job_modify_index
        plan.put(codec.EVALUATIONS, ns, ev.id, ev, None)
        ids.append(ev.id)
    return ids
