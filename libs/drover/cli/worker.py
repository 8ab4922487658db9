"""`drover worker` (the reference scheduler) and `drover sim nodes N`."""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import Any

import click
import grpc

from drover.cli.client import (
    DEFAULT_ADDRESS,
    CommandFailed,
    describe,
    token_and_tls,
    token_tls_options,
)
from drover.coord.kv import MAX_TXN_OPS
from drover.rpc.failover import client_channel
from drover.sim.nodes import SimConfig, SimNodes
from drover.tasks import cancel_and_wait, run
from drover.worker.loop import Worker, WorkerConfig, default_num_schedulers


async def _until_signal(main: asyncio.Future[Any], *, within: float) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    waiter = asyncio.ensure_future(stop.wait())
    await asyncio.wait([main, waiter], return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    if main.done():
        main.result()  # a crash surfaces
    await cancel_and_wait((main,), within=within, what="stop")


@click.command(name="worker")
@click.option("--address", envvar="DROVER_ADDR", default=DEFAULT_ADDRESS, show_default=True,
              help="drover server (the proxy)")
@click.option("--scheduler", "schedulers", multiple=True, default=("service", "batch", "system"),
              show_default=True, help="scheduler types to dequeue")
@click.option("--num-schedulers", default=None, type=click.IntRange(1, 256),
              help="scheduling loops run side by side (Nomad's num_schedulers; "
              "default: one per core)")
@click.option("--max-txn-ops", default=MAX_TXN_OPS, show_default=True,
              type=click.IntRange(16, 1 << 20),
              help="etcd's --max-txn-ops as the cluster runs it: the size of the plans "
              "(a state replica that takes less says so, and plans shrink to it)")
@click.option("--batch", default=16, show_default=True, type=click.IntRange(1, 256),
              help="evaluations per Dequeue")
@click.option("--seed", default=None, type=int, help="seed of the placement shuffle")
@click.option("--log-plan-timing", default=0.0, type=click.FloatRange(0),
              help="log where the plans' time went (seconds per step, running totals) "
              "every this many seconds (0: never)")
@token_tls_options
def worker(address: str, schedulers: tuple[str, ...], num_schedulers: int | None,
           max_txn_ops: int, batch: int, seed: int | None, log_plan_timing: float) -> None:
    """Run the reference scheduler worker: dequeue, plan, submit, ack."""
    logging.basicConfig(level=logging.INFO, format="worker %(levelname)s %(message)s")
    cfg = WorkerConfig(schedulers=schedulers, batch=batch, seed=seed, max_txn_ops=max_txn_ops,
                       num_schedulers=num_schedulers or default_num_schedulers(),
                       log_plan_timing=log_plan_timing)
    token, tls = token_and_tls()

    async def main() -> None:
        async with client_channel(address, tls=tls, token=lambda: token) as ch:
            w = Worker(ch, cfg)
            click.echo(f"worker: {cfg.num_schedulers} schedulers dequeuing "
                       f"{', '.join(schedulers)} from {address}")
            await _until_signal(asyncio.ensure_future(w.run()), within=cfg.stop_timeout)
            click.echo(f"worker: stopped after {w.stats.evaluations} evaluations, "
                       f"{w.stats.placed} placements")

    run(main(), stop_timeout=cfg.stop_timeout)


@click.group(name="sim")
def sim_group() -> None:
    """Simulated clients."""


@sim_group.command(name="nodes")
@click.argument("count", type=click.IntRange(1, 100000))
@click.option("--address", envvar="DROVER_ADDR", default=DEFAULT_ADDRESS, show_default=True)
@click.option("--prefix", default="sim", show_default=True, help="node id prefix")
@click.option("--cpu", default=4000, show_default=True, help="MHz per node")
@click.option("--memory", default=8192, show_default=True, help="MB per node")
@click.option("--datacenter", default="dc1", show_default=True)
@click.option("--heartbeat", envvar="DROVER_SIM_HEARTBEAT", default=3.0, show_default=True,
              type=click.FloatRange(0.1),
              help="seconds between heartbeats of each node when the server's answer "
              "names no TTL (it does: each node heartbeats when its TTL has passed)")
@click.option("--max-txn-ops", default=MAX_TXN_OPS, show_default=True,
              type=click.IntRange(16, 1 << 20),
              help="etcd's --max-txn-ops as the cluster runs it: how many allocation "
              "reports one call carries (a state replica that takes fewer says so, "
              "and the calls shrink to it)")
@token_tls_options
@click.option("--keep/--down-on-exit", default=False,
              help="leave the nodes ready on exit (default: mark them down)")
@click.option("--secrets-file", default="",
              help="keep the nodes' secrets here, so a restart speaks for them again")
def sim_nodes(count: int, address: str, prefix: str, cpu: int, memory: int, datacenter: str,
              heartbeat: float, max_txn_ops: int, keep: bool, secrets_file: str) -> None:
    """Run COUNT simulated nodes: register, heartbeat, run allocations, report health."""
    logging.basicConfig(level=logging.INFO, format="sim %(levelname)s %(message)s")
    cfg = SimConfig(count=count, prefix=prefix, cpu=cpu, memory_mb=memory,
                    datacenter=datacenter, heartbeat=heartbeat, max_txn_ops=max_txn_ops,
                    secrets_file=secrets_file)
    token, tls = token_and_tls()

    async def main() -> None:
        async with client_channel(address, tls=tls, token=lambda: token) as ch:
            sim = SimNodes(ch, cfg)
            click.echo(f"sim: {count} nodes {prefix}-0..{prefix}-{count - 1} on {address}")
            try:
                await _until_signal(asyncio.ensure_future(sim.run()), within=cfg.stop_timeout)
            finally:
                if not keep:
                    await sim.mark_down()
                    click.echo(f"sim: {count} nodes marked down")

    try:
        run(main(), stop_timeout=cfg.stop_timeout)
    except grpc.RpcError as err:  # one line, as every command's failure
        raise CommandFailed(f"sim: {describe(err)}") from None
