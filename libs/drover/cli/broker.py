"""`drover broker ...`: the eval broker's operator API.

``stats`` shows what the broker holds (any replica answers; a follower shows
its hot standby), ``queue`` lists the held evaluations with their broker
state (filtered and paged like every list), ``cancel`` removes one queued
evaluation. Through the proxy, leader-only calls reach the leader.
"""

from __future__ import annotations

from typing import Any

import click
import grpc

from drover.api.broker.v1 import broker_pb2, broker_pb2_grpc
from drover.cli import output, prefix
from drover.cli.client import (
    ClientOptions,
    ListOptions,
    about,
    client_options,
    lister,
    run,
    run_list,
)

QUEUE_COLUMNS = ["ID", "Namespace", "Job", "Type", "Priority", "State", "Deliveries",
                 "Create index"]


def _state(value: int) -> str:
    return output.enum_name(value, broker_pb2.QueueState)


def _timing(t: broker_pb2.TimingSummary) -> str:
    if not t.count:
        return "-"
    return f"p50 {t.p50_ms:.2f} ms, p99 {t.p99_ms:.2f} ms, max {t.max_ms:.2f} ms (n={t.count})"


@click.group(name="broker")
def broker_group() -> None:
    """The eval broker: stats, queue, cancel."""


@broker_group.command(name="stats")
@client_options
def broker_stats(opts: ClientOptions) -> None:
    """What the broker holds, per state and per scheduler type."""

    async def body(ch: grpc.aio.Channel) -> broker_pb2.BrokerStats:
        resp = await broker_pb2_grpc.EvalBrokerServiceStub(ch).GetBrokerStats(
            broker_pb2.GetBrokerStatsRequest(), timeout=opts.timeout)
        return resp.stats

    s = run(opts, body)
    if opts.json:
        output.print_json(s)
        return
    if not s.enabled:
        # A standby's counts are its hot copy, not the queue: zeros there
        # would read as an empty queue.
        click.echo(f"The broker at {opts.address} is a standby, not the leader:\n"
                   "it serves no queue, so it has no counts to show. Ask the leader:\n"
                   "through the proxy (`drover broker stats`); `drover operator members\n"
                   "--service broker` shows which replica leads.")
        return
    output.print_detail(opts, s, [
        ("Role", f"leader (term {s.leader_term})"), ("Ready", s.total_ready),
        ("Unacked", s.total_unacked), ("Pending", s.total_pending),
        ("Waiting", s.total_waiting), ("Blocked", s.total_blocked),
        ("Failed", s.total_failed), ("Cancelled", s.total_cancelled),
        ("Ready wait", _timing(s.ready_wait)), ("Processing", _timing(s.processing))])
    if s.by_scheduler:
        output.print_table("By scheduler", ["Scheduler", "Ready", "Unacked"], (
            [name, per.ready, per.unacked] for name, per in sorted(s.by_scheduler.items())))


@lister(broker_group, "queue", 'CEL over evaluation fields and state, e.g. state == "pending"',
        stale=False)
def broker_queue(listing: ListOptions, opts: ClientOptions) -> None:
    """List the evaluations the broker holds, following every page."""
    held = run_list(opts, listing, broker_pb2_grpc.EvalBrokerServiceStub, "ListQueue",
                    broker_pb2.ListQueueRequest, "evaluations")

    def row(q: broker_pb2.QueuedEvaluation) -> list[Any]:
        ev = q.evaluation
        return [ev.id, ev.namespace, ev.job_id, ev.type, ev.priority, _state(q.state),
                q.deliveries, ev.create_index]

    output.print_list(opts, held, QUEUE_COLUMNS, row, namespace=listing.namespace)


@about(broker_group, "cancel", "eval_id", namespaced=False)
@click.option("--reason", default="", help="recorded in the evaluation's description")
def broker_cancel(eval_id: str, reason: str, opts: ClientOptions) -> None:
    """Cancel one queued evaluation (not one a worker holds)."""

    async def body(ch: grpc.aio.Channel) -> int:
        full = await prefix.evaluation_id(ch, "*", eval_id, opts.timeout)
        resp = await broker_pb2_grpc.EvalBrokerServiceStub(ch).CancelEvaluation(
            broker_pb2.CancelEvaluationRequest(eval_id=full, reason=reason),
            timeout=opts.timeout)
        return int(resp.index)

    index = run(opts, body)
    if opts.json:
        output.print_json({"eval_id": eval_id, "index": index})
    else:
        click.echo(f"canceled {eval_id} at index {index}")
