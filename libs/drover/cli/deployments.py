"""`drover deployment ...`: list, status, promote, pause, resume, fail."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click
import grpc

from drover.api.deployments.v1 import deployments_pb2, deployments_pb2_grpc
from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import deployment_pb2
from drover.cli import output, prefix
from drover.cli.client import (
    ClientOptions,
    ListOptions,
    about,
    lister,
    run,
    run_list,
    state,
)


def _status(value: int) -> str:
    return output.enum_name(value, deployment_pb2.DeploymentStatus)


@click.group(name="deployment")
def deployment_group() -> None:
    """Deployments: list, status, promote, pause, resume, fail."""


@lister(deployment_group, "list", 'CEL, e.g. status == "running"', newest_first=True)
def list_deployments(listing: ListOptions, opts: ClientOptions) -> None:
    """List deployments (namespace, filter, order, id prefix), following every page."""
    deps = run_list(opts, listing, state, "ListDeployments",
                    state_pb2.ListDeploymentsRequest, "deployments")
    output.print_list(
        opts, deps, ["ID", "Job ID", "Namespace", "Job Version", "Status", "Description"],
        lambda d: [d.id, d.job_id, d.namespace, d.job_version, _status(d.status),
                   d.status_description], namespace=listing.namespace)


@about(deployment_group, "status", "deployment_id")
@click.option("--watch", "-w", "--monitor", "watch", is_flag=True,
              help="follow it live until it is terminal (exit 1 unless successful; "
                   "--json: one object per change)")
def deployment_status(deployment_id: str, namespace: str, watch: bool, opts: ClientOptions) -> None:
    """Show one deployment with per-group progress."""
    if watch:
        from drover.cli.watch import watch_deployment

        async def follow(ch: grpc.aio.Channel) -> int:
            full = await prefix.deployment_id(ch, namespace, deployment_id, opts.timeout)
            return await watch_deployment(ch, namespace, full, opts.timeout, opts.json)

        raise SystemExit(run(opts, follow))

    d = prefix.call(opts, "deployment", namespace, deployment_id, lambda ch, full: state(
        ch).GetDeployment(state_pb2.GetDeploymentRequest(namespace=namespace, id=full),
                          timeout=opts.timeout)).deployment
    if output.print_detail(opts, d, [
            ("ID", d.id), ("Job ID", d.job_id), ("Job Version", d.job_version),
            ("Status", _status(d.status)), ("Description", d.status_description),
            ("Created", output.when(d.create_time))]):
        return
    from drover.cli.watch import deployment_table

    output.print_table("Deployed", *deployment_table(d))


def _steer(opts: ClientOptions, namespace: str, deployment_id: str, method: str,
           request: Callable[[str], Any], verb: str) -> None:
    """One call to the deployment watcher about a deployment (its id
    resolved from a prefix), and what it did: ``deployment ID verb``."""

    result = prefix.call(opts, "deployment", namespace, deployment_id, lambda ch, full: getattr(
        deployments_pb2_grpc.DeploymentWatcherServiceStub(ch), method)(
            request(full), timeout=opts.timeout)).result
    if opts.json:
        output.print_json(result)
        return
    msg = f"deployment {output.short_id(result.deployment.id or deployment_id)} {verb}"
    if result.eval_id:
        msg += f"; evaluation {output.short_id(result.eval_id)}"
    if result.HasField("reverted_job_version"):
        msg += f"; job reverted to version {result.reverted_job_version}"
    click.echo(msg)


@about(deployment_group, "promote", "deployment_id")
@click.option("--group", "groups", multiple=True, help="promote only these groups")
def promote(deployment_id: str, namespace: str, groups: tuple[str, ...],
            opts: ClientOptions) -> None:
    """Promote canaries (all groups unless --group)."""
    _steer(opts, namespace, deployment_id, "PromoteDeployment",
           lambda full: deployments_pb2.PromoteDeploymentRequest(
               namespace=namespace, deployment_id=full, all=not groups, groups=list(groups)),
           "promoted")


@about(deployment_group, "pause", "deployment_id")
def pause(deployment_id: str, namespace: str, opts: ClientOptions) -> None:
    """Pause a running deployment."""
    _steer(opts, namespace, deployment_id, "PauseDeployment",
           lambda full: deployments_pb2.PauseDeploymentRequest(
               namespace=namespace, deployment_id=full, pause=True), "paused")


@about(deployment_group, "resume", "deployment_id")
def resume(deployment_id: str, namespace: str, opts: ClientOptions) -> None:
    """Resume a paused deployment."""
    _steer(opts, namespace, deployment_id, "PauseDeployment",
           lambda full: deployments_pb2.PauseDeploymentRequest(
               namespace=namespace, deployment_id=full, pause=False), "resumed")


@about(deployment_group, "fail", "deployment_id")
def fail(deployment_id: str, namespace: str, opts: ClientOptions) -> None:
    """Fail a deployment (rolls back where auto-revert is set)."""
    _steer(opts, namespace, deployment_id, "FailDeployment",
           lambda full: deployments_pb2.FailDeploymentRequest(
               namespace=namespace, deployment_id=full), "failed")
