"""`drover node drain` and `drover node eligibility` (Nomad's shapes).

``drover node drain NODE`` starts a drain with Nomad's default deadline of
1 h (``--deadline``; ``--no-deadline``: none; ``--force``: stop everything
now), ``--ignore-system`` leaves system jobs' allocations running,
``--disable`` cancels a drain (the node becomes eligible again unless
``--keep-ineligible``). ``--monitor`` follows the drain until it completes:
each allocation's move is printed as it happens, as ``nomad node drain
-monitor`` does. The node stays ineligible after a drain completes:
``drover node eligibility NODE --enable`` takes it back. Node ids may be
given short, as in the other node commands.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any

import click
import grpc

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import node_pb2
from drover.cli import output, prefix
from drover.cli.client import (
    ClientOptions,
    CommandFailed,
    about,
    list_allocations,
    run,
    state,
)
from drover.cli.nodes import client_status, desired_status, node_group
from drover.config import parse_duration
from drover.drain.strategy import DEFAULT_DEADLINE

ELIGIBLE = node_pb2.NODE_SCHEDULING_ELIGIBILITY_ELIGIBLE
INELIGIBLE = node_pb2.NODE_SCHEDULING_ELIGIBILITY_INELIGIBLE
#: --monitor's poll period (seconds).
MONITOR_EVERY = 0.5


def _deadline(deadline: str | None, force: bool, no_deadline: bool) -> float:
    if sum((deadline is not None, force, no_deadline)) > 1:
        raise click.UsageError("--deadline, --force and --no-deadline exclude each other")
    if force or no_deadline:
        return 0.0
    if deadline is None:
        return DEFAULT_DEADLINE
    try:
        secs = parse_duration(deadline)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--deadline") from None
    if secs <= 0:
        raise click.BadParameter("must be positive (or use --force / --no-deadline)",
                                 param_hint="--deadline")
    return secs


@about(node_group, "drain", "node_id", namespaced=False)
@click.option("--enable", is_flag=True, help="start a drain (the default; Nomad's -enable)")
@click.option("--disable", is_flag=True, help="cancel the drain")
@click.option("--deadline", default=None,
              help="stop what is left after this long (e.g. 30m; default 1h)")
@click.option("--force", is_flag=True, help="stop every allocation now (deadline already past)")
@click.option("--no-deadline", is_flag=True, help="never force: wait for every migration")
@click.option("--ignore-system", is_flag=True, help="leave system jobs' allocations running")
@click.option("--keep-ineligible", is_flag=True, help="with --disable: stay ineligible")
@click.option("--monitor", "--watch", "-w", "monitor", is_flag=True,
              help="follow the drain until it completes (--json: one object per line)")
def drain(node_id: str, enable: bool, disable: bool, deadline: str | None, force: bool,
          no_deadline: bool, ignore_system: bool, keep_ineligible: bool, monitor: bool,
          opts: ClientOptions) -> None:
    """Drain a node: its allocations migrate, at most each group's
    migrate.max_parallel at a time; the node becomes ineligible."""
    if enable and disable:
        raise click.UsageError("--enable and --disable exclude each other")
    req = state_pb2.UpdateNodeDrainRequest(mark_eligible=disable and not keep_ineligible)
    if not disable:
        req.drain_strategy.deadline.FromNanoseconds(
            int(_deadline(deadline, force, no_deadline) * 1e9))
        req.drain_strategy.ignore_system_jobs = ignore_system
        req.drain_strategy.force = force

    async def body(ch: grpc.aio.Channel) -> tuple[str, Any]:
        full = await prefix.resolve(ch, "node", None, node_id, opts.timeout)
        req.id = full
        resp = await state(ch).UpdateNodeDrain(req, timeout=opts.timeout)
        if monitor and not disable:
            await _monitor(ch, full, opts.timeout, opts.json)
        return full, resp

    full, resp = run(opts, body)
    if opts.json and not (monitor and not disable):
        output.print_json({"node_id": full, "index": resp.index, "unblocked": resp.unblocked})
        return
    if disable:
        click.echo(f"Node {full!r} drain strategy unset"
                   + ("" if keep_ineligible else "; eligible for scheduling"))
    elif not monitor:
        click.echo(f"Node {full!r} drain strategy set")


async def _monitor(ch: grpc.aio.Channel, node_id: str, per_call: float, as_json: bool) -> None:
    """Poll the node and its allocations until the drain ends; report changes
    (a line each, or a JSON object per line; ``t``: seconds since the start)."""
    seen: dict[str, tuple[int, int, bool]] = {}
    started = time.monotonic()
    stub = state(ch)

    def say(kind: str, text: str, **extra: Any) -> None:
        if as_json:
            output.print_json_line({"t": round(time.monotonic() - started, 3), "event": kind,
                                    **extra})
        else:
            click.echo(f"{output.when(datetime.now(UTC))}: {text}")

    say("start", "Ctrl-C to stop monitoring: will not cancel the node drain", node=node_id)
    say("set", f"Node {node_id!r} drain strategy set", node=node_id)
    while True:
        node = (await stub.GetNode(state_pb2.GetNodeRequest(id=node_id),
                                   timeout=per_call)).node
        for a in await list_allocations(ch, f'node_id == "{node_id}"', per_call):
            now = (a.desired_status, a.client_status, a.desired_transition.migrate)
            old = seen.get(a.id)
            if old == now:
                continue
            seen[a.id] = now
            name = f"Alloc {output.short_id(a.id)!r}"
            if now[2] and (old is None or not old[2]):
                say("marked", f"{name} marked for migration", alloc=a.id)
            if old is not None and old[0] != now[0]:
                say("desired", f"{name} draining ({desired_status(now[0])})", alloc=a.id)
            if old is not None and old[1] != now[1]:
                say("status", f"{name} status {client_status(old[1])} -> "
                    f"{client_status(now[1])}", alloc=a.id, status=client_status(now[1]))
        if not node.HasField("drain_strategy"):
            last = node.last_drain
            if last.status == node_pb2.DRAIN_STATUS_COMPLETE:
                say("complete", f"Node {node_id!r} drain complete"
                    + (" (deadline reached)" if last.deadlined else ""), node=node_id)
                return
            raise CommandFailed(f"Node {node_id!r} drain cancelled")
        await asyncio.sleep(MONITOR_EVERY)


@about(node_group, "eligibility", "node_id", namespaced=False)
@click.option("--enable", is_flag=True, help="eligible for new allocations")
@click.option("--disable", is_flag=True, help="ineligible for new allocations")
def eligibility(node_id: str, enable: bool, disable: bool, opts: ClientOptions) -> None:
    """Set a node's scheduling eligibility (a drained node stays ineligible
    until enabled)."""
    if enable == disable:
        raise click.UsageError("give exactly one of --enable or --disable")

    async def body(ch: grpc.aio.Channel) -> tuple[str, Any]:
        full = await prefix.resolve(ch, "node", None, node_id, opts.timeout)
        resp = await state(ch).UpdateNodeStatus(
            state_pb2.UpdateNodeStatusRequest(
                id=full, scheduling_eligibility=ELIGIBLE if enable else INELIGIBLE),
            timeout=opts.timeout)
        return full, resp

    full, resp = run(opts, body)
    if opts.json:
        output.print_json({"node_id": full, "index": resp.index, "unblocked": resp.unblocked})
        return
    click.echo(f"Node {full!r} scheduling eligibility set: "
               + ("eligible" if enable else "ineligible") + " for scheduling")
