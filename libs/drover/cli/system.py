"""`drover system gc`: force a garbage collection pass now (as `nomad system gc`)."""

from __future__ import annotations

import click

from drover.api.deployments.v1 import deployments_pb2, deployments_pb2_grpc
from drover.cli import output
from drover.cli.client import ClientOptions, client_options, unary


@click.group(name="system")
def system_group() -> None:
    """Cluster housekeeping: garbage collection."""


@system_group.command(name="gc")
@click.option("--respect-thresholds", is_flag=True,
              help="collect only what is older than the configured thresholds"
                   " (default: everything terminal, whatever its age)")
@client_options
def gc(respect_thresholds: bool, opts: ClientOptions) -> None:
    """Run a garbage collection pass on the deployment watcher's leader."""
    r = unary(opts, deployments_pb2_grpc.DeploymentWatcherServiceStub, "CollectGarbage",
              deployments_pb2.CollectGarbageRequest(force=not respect_thresholds))
    if opts.json:
        output.print_json(r)
        return
    click.echo(f"gc: removed {r.evaluations} evaluations, {r.allocations} allocations,"
               f" {r.deployments} deployments,\n    {r.jobs} jobs ({r.job_versions} versions),"
               f" {r.nodes} nodes; examined {r.examined} in {r.txns} txns"
               f" (largest {r.largest_txn} ops)\n    in {r.duration_seconds:.3f}s")
