"""`drover job run`'s monitor (Nomad's ``monitor``): the evaluation until it
is terminal, the allocations it placed, then the deployment until it is.

Each step is one line, ``==> TIME: what happened`` (Nomad's shape), its
details indented below it; with
``--json`` each step is one JSON object on one line (``event`` names it).
The exit code is Nomad's: 0 when all went well, 2 when the evaluation could
not place every allocation, 1 when the deployment failed.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import click
import grpc

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import evaluation_pb2
from drover.cli import output
from drover.cli.client import list_allocations, state
from drover.cli.watch import watch_deployment

#: How often the evaluation is read while it is not terminal (seconds).
POLL = 0.5
_TERMINAL = (evaluation_pb2.EVALUATION_STATUS_COMPLETE, evaluation_pb2.EVALUATION_STATUS_FAILED,
             evaluation_pb2.EVALUATION_STATUS_CANCELED)


class Events:
    """Where the monitor's steps go: lines for people or JSON lines."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json

    def say(self, event: str, text: str, *, head: bool = False, **fields: Any) -> None:
        now = datetime.now(UTC)
        if self.as_json:
            output.print_json_line({"event": event, "time": output.when(now), **fields})
        else:
            # A step's details under it, indented, without the time (80 columns).
            click.echo(f"==> {output.when(now)}: {text}" if head else f"    {text}")


def _status(ev: evaluation_pb2.Evaluation) -> str:
    return output.enum_name(ev.status, evaluation_pb2.EvaluationStatus)


async def monitor(ch: grpc.aio.Channel, namespace: str, eval_id: str, per_call: float,
                  out: Events, deployment_id: str = "") -> int:
    """Follow ``eval_id`` and then its deployment (the evaluation's, else
    ``deployment_id``, the one its registration started); the exit code."""
    stub = state(ch)
    out.say("monitoring", f'Monitoring evaluation "{output.short_id(eval_id)}"', head=True,
            eval_id=eval_id)
    last = ""
    while True:
        ev = (await stub.GetEvaluation(state_pb2.GetEvaluationRequest(id=eval_id),
                                       timeout=per_call)).evaluation
        if _status(ev) != last:
            if not last:
                out.say("triggered", f'Evaluation triggered by job "{ev.job_id}"',
                        triggered_by=ev.triggered_by, job_id=ev.job_id)
            else:
                out.say("status", f'Evaluation status changed: "{last}" -> "{_status(ev)}"',
                        status=_status(ev))
            last = _status(ev)
        if ev.status in _TERMINAL:
            break
        await asyncio.sleep(POLL)
    for a in await list_allocations(ch, f'eval_id == "{eval_id}"', per_call, namespace):
        out.say("allocation", f'Allocation "{output.short_id(a.id)}" created: node '
                f'"{output.short_id(a.node_id)}", group "{a.task_group}"', alloc_id=a.id,
                node_id=a.node_id, group=a.task_group)
    out.say("finished", f'Evaluation "{output.short_id(ev.id)}" finished with status "{last}"',
            head=True, status=last, description=ev.status_description)
    code = 0
    if ev.blocked_eval:
        out.say("blocked", "Evaluation could not place every allocation: "
                f'"{output.short_id(ev.blocked_eval)}" waits for room',
                blocked_eval=ev.blocked_eval)
        code = 2
    deployment_id = ev.deployment_id or deployment_id
    if deployment_id:
        out.say("deployment", f'Monitoring deployment "{output.short_id(deployment_id)}"',
                head=True, deployment_id=deployment_id)
        if await watch_deployment(ch, namespace, deployment_id, per_call, out.as_json):
            return 1
    return code
