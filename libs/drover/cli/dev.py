"""`drover dev`: local etcd (one member or a cluster) and all four services, in the foreground."""

from __future__ import annotations

import signal
import threading

import click

from drover.dev.supervisor import DevLayout, Supervisor


@click.command()
@click.option("--data-dir", default=None, help="etcd data dir (default: a fresh temp dir)")
@click.option("--port-offset", default=0, show_default=True, type=click.IntRange(0, 50000),
              help="add this to every port (run two suites side by side)")
@click.option("--etcd-members", default=1, show_default=True, type=click.IntRange(1, 7),
              help="run an etcd cluster of this many members on loopback (3 for fault drills)")
@click.option("--nodes", default=3, show_default=True, type=click.IntRange(0, 10000),
              help="simulated nodes to run, with one scheduler worker (0: neither)")
@click.option("--acl", is_flag=True, envvar="DROVER_ACL",
              help="enforce access control on every service (then `drover acl bootstrap`)")
def dev(data_dir: str | None, port_offset: int, etcd_members: int, nodes: int,
        acl: bool) -> None:
    """Run etcd and the state, broker, deployments and proxy services locally,
    plus a scheduler worker and simulated nodes so jobs roll out unattended.

    Ctrl-C or SIGTERM stops every child, etcd included, within 5 seconds.
    """
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    sup = Supervisor(layout=DevLayout().shifted(port_offset), data_dir=data_dir, log=click.echo,
                     etcd_members=etcd_members, nodes=nodes, acl=acl)
    code = 0
    try:
        sup.start()
        click.echo(f"drover is up; talk to the proxy at {sup.layout.address('proxy')} "
                   "(Ctrl-C stops everything)")
        if acl and not nodes:
            click.echo("ACLs are on: run `drover acl bootstrap` for a management token, "
                       "then export DROVER_TOKEN=<secret id>")
        while not stop.wait(0.5):
            dead = sup.poll()
            if dead:
                click.echo(f"{dead} exited; stopping the suite", err=True)
                code = 1
                break
    except Exception as e:
        click.echo(f"drover dev: {e}", err=True)
        code = 1
    finally:
        sup.stop()
        click.echo("stopped")
    raise SystemExit(code)
