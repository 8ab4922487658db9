"""`drover drill`: fault drills on a throwaway local cluster.

``drover drill partition`` runs :mod:`drover.dev.partition_drill`: drover in
network namespaces, the broker leader (or a state replica) cut from etcd for
a while, then healed, and what that cost. Root, ``ip`` and ``nft`` are needed;
without them it says so and exits 1 before starting anything.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import click

from drover.dev.partition_drill import (
    TARGETS,
    DrillUnavailable,
    PartitionConfig,
    run_partition_drill,
)


@click.group(name="drill")
def drill_group() -> None:
    """Fault drills on a throwaway local cluster (root, network namespaces)."""


@drill_group.command(name="partition")
@click.option("--target", type=click.Choice(TARGETS), default="broker-leader",
              show_default=True, help="what to cut from etcd")
@click.option("--seconds", "fault_seconds", type=click.FloatRange(min=0.5), default=5.0,
              show_default=True, help="how long the cut lasts")
@click.option("--warmup", type=click.FloatRange(min=0), default=3.0, show_default=True,
              help="load before the cut, in seconds")
@click.option("--settle", type=click.FloatRange(min=0), default=4.0, show_default=True,
              help="load after healing, in seconds (part of the measured window)")
@click.option("--write-rate", type=click.FloatRange(min=0.1), default=4.0, show_default=True,
              help="jobs registered per second")
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--logs", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="keep the processes' logs here (default: removed at the end)")
def partition(target: str, fault_seconds: float, warmup: float, settle: float,
              write_rate: float, seed: int, logs: Path | None) -> None:
    """Cut the broker leader (or a state replica) from etcd, heal, and report.

    Starts one etcd member, two state and two broker replicas and a proxy,
    each in its own network namespace, with a load through the proxy (a job
    writer, a scheduler worker, simulated nodes). After the warm-up the
    target loses etcd (both ways; it still reaches everything else) for
    --seconds, then the network heals. Prints how long writes and deliveries
    stopped and the calls that failed by method, code and reason.
    """
    cfg = PartitionConfig(target=target, fault_seconds=fault_seconds, warmup=warmup,
                          settle=settle, write_rate=write_rate, seed=seed, logs=logs)
    # The load's own clients log each call a fault fails; the report counts
    # them by reason instead.
    logging.getLogger("drover").setLevel(logging.ERROR)
    try:
        report = asyncio.run(run_partition_drill(cfg, say=click.echo))
    except DrillUnavailable as e:
        raise click.ClickException(str(e)) from None
    for line in report.lines():
        click.echo(line)
