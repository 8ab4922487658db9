"""`drover dev`: local etcd (one member or a cluster) and all four services, in the foreground."""

from __future__ import annotations

import signal
import threading

import click

from drover.dev.supervisor import (
    COMPACTION_RETENTION,
    DEFAULT_REPLICAS,
    MAX_REPLICAS,
    SERVICES,
    DevLayout,
    Supervisor,
)
from drover.dev.workers import WORKERS, WorkerNotBuilt, worker_program


@click.command()
@click.option("--data-dir", default=None,
              help="keep etcd's data (and --acl's tokens) here across restarts "
                   "(default: a fresh temp dir, removed at stop)")
@click.option("--port-offset", default=0, show_default=True, type=click.IntRange(0, 50000),
              help="add this to every port (run two suites side by side)")
@click.option("--etcd-members", default=1, show_default=True, type=click.IntRange(1, 7),
              help="run an etcd cluster of this many members on loopback (3 for fault drills)")
@click.option("--replicas", default=None, type=click.IntRange(1, MAX_REPLICAS),
              help="replicas of every service (default: 2 of the broker and the deployment "
                   "watcher, so a leader killed fails over; 1 of the state and the proxy)")
@click.option("--nodes", default=3, show_default=True, type=click.IntRange(0, 10000),
              help="simulated nodes to run, with one scheduler worker (0: neither)")
@click.option("--worker", type=click.Choice(WORKERS), default="python", show_default=True,
              help="the scheduler worker to run: the reference (python) or the TypeScript "
                   "port (workers/typescript; `make ts-worker` builds it)")
@click.option("--etcd-compaction-retention", default=COMPACTION_RETENTION, show_default=True,
              help="etcd's periodic auto-compaction keeps this much history (as the "
                   "manifests: a Subscribe resumes from an index within it)")
@click.option("--etcd-quota-backend-bytes", default=0, type=click.IntRange(0),
              help="etcd's --quota-backend-bytes, its database's size limit (0: etcd's "
                   "default, 2 GiB); a large benchmark raises it")
@click.option("--acl", is_flag=True, envvar="DROVER_ACL",
              help="enforce access control on every service; the suite bootstraps and prints "
                   "a management token (kept in <data-dir>/acl-tokens.json)")
def dev(data_dir: str | None, port_offset: int, etcd_members: int, replicas: int | None,
        nodes: int, worker: str, etcd_compaction_retention: str, etcd_quota_backend_bytes: int,
        acl: bool) -> None:
    """Run etcd and the state, broker, deployments and proxy services locally,
    plus a scheduler worker and simulated nodes so jobs roll out unattended.

    A child that dies is restarted (backoff from 0.5 s doubling to 10 s) and
    the restart logged. Ctrl-C or SIGTERM stops every child, etcd included,
    within 5 seconds.
    """
    if nodes:
        try:
            worker_program(worker)  # before anything starts: a worker not built says so
        except WorkerNotBuilt as e:
            raise click.ClickException(str(e)) from e
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    counts = dict(DEFAULT_REPLICAS) if replicas is None else dict.fromkeys(SERVICES, replicas)
    sup = Supervisor(layout=DevLayout().shifted(port_offset), data_dir=data_dir, log=click.echo,
                     etcd_members=etcd_members, nodes=nodes, acl=acl, replicas=counts,
                     worker=worker, compaction_retention=etcd_compaction_retention,
                     quota_backend_bytes=etcd_quota_backend_bytes)
    code = 0
    try:
        sup.start()
        click.echo(f"drover is up; talk to the proxy at {sup.layout.address('proxy')}, "
                   f"web UI at http://{sup.layout.host}:{sup.layout.ui}/ui "
                   "(Ctrl-C stops everything)")
        while not stop.wait(0.5):
            sup.supervise()
    except Exception as e:
        click.echo(f"drover dev: {e}", err=True)
        code = 1
    finally:
        sup.stop()
        click.echo("stopped")
    raise SystemExit(code)
