"""SetSchedulerConfig's planner (:mod:`drover.state.scheduler_config.core.config`)."""

from __future__ import annotations

from state_core_data import context, view

from drover.api.types.v1 import scheduler_pb2
from drover.state.core import codec
from drover.state.scheduler_config.core import config


def test_scheduler_config_cas_writes_nothing_when_it_does_not_hold() -> None:
    cfg = scheduler_pb2.SchedulerConfig(pause_eval_broker=True)
    v = view([(codec.SCHEDULER_CONFIG, scheduler_pb2.SchedulerConfig(), 2, 3)])
    assert not config.plan_scheduler_config(v, context(), cfg, 2).writes
    assert config.plan_scheduler_config(v, context(), cfg, 2).respond(3).updated is False
    plan = config.plan_scheduler_config(v, context(), cfg, 3)
    assert plan.compares[0].value == 3 and plan.respond(4).updated
