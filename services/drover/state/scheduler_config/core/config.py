"""SetSchedulerConfig's planner (pure): Nomad's ``Operator.SchedulerSetConfiguration``,
a check-and-set when ``cas_index`` is given."""

from __future__ import annotations

from typing import Any

from drover.api.state.v1 import state_pb2
from drover.state.core import codec
from drover.state.core.plan import PlanBuilder, WriteContext, WritePlan, no_write
from drover.state.core.rules import cas_holds
from drover.state.core.view import View, scheduler_config


def plan_scheduler_config(view: View, ctx: WriteContext, config: Any,
                          cas_index: int | None) -> WritePlan:
    _, mod = scheduler_config(view)
    if not cas_holds(cas_index, mod):
        return no_write(lambda rev: state_pb2.SetSchedulerConfigResponse(updated=False,
                                                                          index=rev))
    plan = PlanBuilder(ctx.keys, ctx.on_put)
    plan.put(codec.SCHEDULER_CONFIG, codec.GLOBAL_NS, codec.SCHEDULER_CONFIG_ID, config, mod)
    return plan.build(lambda rev: state_pb2.SetSchedulerConfigResponse(updated=True, index=rev))
