"""Entry point of the `drover` command: a click group of subcommands."""

from __future__ import annotations

import click

from drover.cli.dev import dev
from drover.cli.serve import serve


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="drover")
def cli() -> None:
    """drover: evaluations and rolling deployments over etcd."""


cli.add_command(serve)
cli.add_command(dev)


def main() -> None:
    cli(auto_envvar_prefix="DROVER")


if __name__ == "__main__":
    main()
