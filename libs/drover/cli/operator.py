"""`drover operator ...`: scheduler pause/resume, members, convergence."""

from __future__ import annotations

import dataclasses
from typing import Any

import click
import grpc
from google.protobuf import duration_pb2

from drover.api.proxy.v1 import proxy_pb2, proxy_pb2_grpc
from drover.api.state.v1 import state_pb2
from drover.cli import output
from drover.cli.client import (
    ClientOptions,
    CommandFailed,
    client_options,
    run,
    state,
    unary,
)


@click.group(name="operator")
def operator_group() -> None:
    """Cluster operations."""


@operator_group.group(name="scheduler")
def scheduler_group() -> None:
    """Scheduler configuration: get-config, pause/resume the eval broker."""


def _set_paused(paused: bool, opts: Any) -> None:
    """Pause or resume the eval broker, and say whether that changed anything."""
    async def body(ch: grpc.aio.Channel) -> bool:
        stub = state(ch)
        current = (await stub.GetSchedulerConfig(state_pb2.GetSchedulerConfigRequest(),
                                                  timeout=opts.timeout)).config
        if current.pause_eval_broker == paused:
            return False
        config = type(current)()
        config.CopyFrom(current)
        config.pause_eval_broker = paused
        resp = await stub.SetSchedulerConfig(state_pb2.SetSchedulerConfigRequest(
            config=config, cas_index=current.modify_index), timeout=opts.timeout)
        if not resp.updated:
            raise CommandFailed("the scheduler config changed concurrently; try again")
        return True

    changed = run(opts, body)
    if opts.json:
        output.print_json({"paused": paused, "changed": changed})
    elif paused:
        click.echo("eval broker paused" if changed else "eval broker was already paused")
    else:
        click.echo("eval broker resumed" if changed else "eval broker was not paused")


@scheduler_group.command(name="get-config")
@client_options
def get_config(opts: ClientOptions) -> None:
    """The scheduler configuration (as `nomad operator scheduler get-config`)."""

    c = unary(opts, state, "GetSchedulerConfig", state_pb2.GetSchedulerConfigRequest()).config
    output.print_detail(opts, c, [
        ("Eval Broker Paused", c.pause_eval_broker), ("Create Index", c.create_index),
        ("Modify Index", c.modify_index)])


@scheduler_group.command(name="pause")
@client_options
def pause(opts: ClientOptions) -> None:
    """Pause the eval broker (no deliveries; evaluations may be deleted)."""
    _set_paused(True, opts)


@scheduler_group.command(name="resume")
@client_options
def resume(opts: ClientOptions) -> None:
    """Resume the eval broker."""
    _set_paused(False, opts)


@operator_group.command(name="members")
@click.option("--service", default="", help="only this service (state, broker, deployments, proxy)")
@client_options
def members(service: str, opts: ClientOptions) -> None:
    """Replicas the proxy knows, per service, in the order it uses them, and
    the proxy replicas themselves."""

    resp = unary(opts, proxy_pb2_grpc.ClientProxyServiceStub, "ListServers",
                 proxy_pb2.ListServersRequest(service="" if service == "proxy" else service))
    if opts.json:
        output.print_json(resp)
        return
    rows = []
    for lst in resp.lists if service != "proxy" else ():
        for s in lst.servers:
            rows.append([lst.service, s.replica, s.address, s.rpc_version,
                         "yes" if s.healthy else "no", "leader" if s.leader else "",
                         "yes" if s.backup else ""])
    if not service or service == "proxy":
        for s in resp.proxies:
            rows.append(["proxy", s.replica, s.address, s.rpc_version, "yes", "", ""])
    columns = ["Service", "Replica", "Address", "RPC", "Healthy", "Role", "Backup"]
    if not any(r[-1] for r in rows):  # no backup server: the column would be empty
        columns, rows = columns[:-1], [r[:-1] for r in rows]
    click.echo(f"Membership revision {resp.revision}")
    output.print_table(None, columns, rows)


@operator_group.command(name="convergence")
@click.option("--revision", required=True, type=click.IntRange(min=1))
@click.option("--wait", default=10.0, show_default=True, type=click.FloatRange(min=0),
              help="seconds to wait for every proxy replica")
@client_options
def convergence(revision: int, wait: float, opts: ClientOptions) -> None:
    """Wait until every proxy replica has applied membership REVISION."""
    opts = dataclasses.replace(opts, timeout=max(opts.timeout, wait + 5))

    async def body(ch: grpc.aio.Channel) -> proxy_pb2.WaitForConvergenceResponse:
        secs = int(wait)
        return await proxy_pb2_grpc.ClientProxyServiceStub(ch).WaitForConvergence(
            proxy_pb2.WaitForConvergenceRequest(
                revision=revision,
                timeout=duration_pb2.Duration(seconds=secs, nanos=int((wait - secs) * 1e9))),
            timeout=opts.timeout)

    resp = run(opts, body)
    if opts.json:
        output.print_json(resp)
    else:
        # "behind" as the proxy judged it (resp.behind), never recomputed: a
        # revision that changed no membership counts as applied once the last
        # membership change before it is (the proxy's effective target).
        behind = {r.replica for r in resp.behind}
        output.print_table(
            f"converged at revision {revision}" if resp.converged
            else f"NOT converged at revision {revision}: {len(behind)} behind",
            ["Replica", "Address", "Applied revision", "State"],
            ([r.replica, r.address, r.applied_revision,
              "behind" if r.replica in behind else "applied"] for r in resp.replicas))
    if not resp.converged:
        raise SystemExit(2)
