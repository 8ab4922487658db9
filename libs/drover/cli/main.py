"""Entry point of the `drover` command: a click group of subcommands."""

from __future__ import annotations

import gc
import os
from typing import Any

import click

from drover.cli import job_versions, node_drain  # noqa: F401  (register job plan..., node drain...)
from drover.cli.acl import acl_group
from drover.cli.broker import broker_group
from drover.cli.deployments import deployment_group
from drover.cli.dev import dev
from drover.cli.drill import drill_group
from drover.cli.environment import help_epilog, known_variables, unknown_warnings
from drover.cli.evals import eval_group
from drover.cli.global_options import apply, global_options
from drover.cli.jobs import job_group
from drover.cli.nodes import alloc_group, node_group
from drover.cli.operator import operator_group
from drover.cli.serve import serve
from drover.cli.system import system_group
from drover.cli.ui import ui
from drover.cli.worker import sim_group, worker


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, epilog=help_epilog())
@click.version_option(package_name="drover")
@global_options
@click.pass_context
def cli(ctx: click.Context, **given: Any) -> None:
    """drover: evaluations and rolling deployments over etcd.

    Client options (--address, --json, --timeout, --token, --tls-*) go before
    or after the subcommand."""
    apply(ctx, given)


cli.add_command(serve)
cli.add_command(dev)
cli.add_command(job_group)
cli.add_command(eval_group)
cli.add_command(deployment_group)
cli.add_command(broker_group)
cli.add_command(operator_group)
cli.add_command(system_group)
cli.add_command(worker)
cli.add_command(sim_group)
cli.add_command(node_group)
cli.add_command(alloc_group)
cli.add_command(acl_group)
cli.add_command(drill_group)
cli.add_command(ui)


def main() -> None:
    for line in unknown_warnings(os.environ, known_variables(cli)):
        click.echo(line, err=True)
    try:
        cli(auto_envvar_prefix="DROVER")
    finally:
        # On the way out the interpreter's final collections would walk every
        # object still alive (grpc, protobuf, telemetry: ~0.25 s of CPU per
        # service process, seconds on a loaded box; `drover dev` stops five at
        # once) only to free what the OS frees anyway. Frozen objects are
        # skipped; refcounted teardown and atexit handlers still run.
        gc.freeze()


if __name__ == "__main__":
    main()
