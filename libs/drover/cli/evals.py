"""`drover eval ...`: list, count, status and delete evaluations.

Deleting by filter is the big-backlog flow: count first, ask, then loop on
``next_page_token`` (each call is one small bounded etcd txn on the server)
with a progress bar, and report what was actually deleted.
"""

from __future__ import annotations

from typing import Any

import click
import grpc
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import evaluation_pb2
from drover.cli import output, prefix
from drover.cli.client import (
    ClientOptions,
    CommandFailed,
    ListOptions,
    about,
    client_options,
    lister,
    run,
    run_list,
    state,
)
from drover.paging.request import DEFAULTS
from drover.rpc.remote import from_rpc_error

#: A filter delete's page size when none is given: the paging maximum (the
#: server clamps it to the page its etcd txns in flight allow).
LARGEST_PAGE = DEFAULTS.maximum
PAUSE_HINT = "pause it first with `drover operator scheduler pause` (and resume it afterwards)"


def _status(value: int) -> str:
    return output.enum_name(value, evaluation_pb2.EvaluationStatus)


def _row(ev: evaluation_pb2.Evaluation) -> list[Any]:
    return [ev.id, ev.priority, ev.triggered_by, ev.job_id, ev.namespace, ev.type,
            _status(ev.status)]


#: Nomad's `eval list` columns (Namespace only across namespaces), with the
#: scheduler type; the create index and the rest are in `eval status`/--json.
COLUMNS = ["ID", "Priority", "Triggered By", "Job ID", "Namespace", "Type", "Status"]


@click.group(name="eval")
def eval_group() -> None:
    """Evaluations: list, count, status, delete."""


@lister(eval_group, "list", 'CEL, e.g. status == "pending"')
def list_evals(listing: ListOptions, opts: ClientOptions) -> None:
    """List evaluations, following every page."""
    evals = run_list(opts, listing, state, "ListEvaluations",
                     state_pb2.ListEvaluationsRequest, "evaluations")
    output.print_list(opts, evals, COLUMNS, _row, namespace=listing.namespace)


@eval_group.command(name="count")
@click.option("--namespace", "-n", default="default", show_default=True,
              help='"*" for every namespace')
@click.option("--filter", "filter_", default="")
@click.option("--job", default="", help="only this job's evaluations")
@client_options
def count_evals(namespace: str, filter_: str, job: str, opts: ClientOptions) -> None:
    """Count evaluations matching a filter."""

    async def body(ch: grpc.aio.Channel) -> int:
        resp = await state(ch).CountEvaluations(
            state_pb2.CountEvaluationsRequest(namespace=namespace, filter=filter_, job_id=job),
            timeout=opts.timeout)
        return int(resp.count)

    n = run(opts, body)
    output.print_json({"count": n}) if opts.json else click.echo(n)


@about(eval_group, "status", "eval_id", namespaced=False)
@click.option("--related", is_flag=True, help="also show previous/next/blocked evaluations")
def eval_status(eval_id: str, related: bool, opts: ClientOptions) -> None:
    """Show one evaluation."""

    resp = prefix.call(opts, "evaluation", "*", eval_id, lambda ch, full: state(
        ch).GetEvaluation(state_pb2.GetEvaluationRequest(id=full, include_related=related),
                          timeout=opts.timeout))
    ev = resp.evaluation
    if output.print_detail(opts, resp, [
            ("ID", ev.id), ("Namespace", ev.namespace), ("Job ID", ev.job_id),
            ("Type", ev.type), ("Priority", ev.priority), ("Triggered By", ev.triggered_by),
            ("Status", _status(ev.status)), ("Status Description", ev.status_description),
            ("Deployment ID", ev.deployment_id), ("Previous Eval", ev.previous_eval),
            ("Next Eval", ev.next_eval), ("Blocked Eval", ev.blocked_eval),
            ("Create Index", ev.create_index), ("Modify Index", ev.modify_index)]):
        return
    if resp.related:
        output.print_table("Related", COLUMNS, (_row(e) for e in resp.related))


def _refused(err: grpc.RpcError) -> None:
    if from_rpc_error(err).reason == "BROKER_NOT_PAUSED":
        raise CommandFailed(f"the eval broker is not paused: {PAUSE_HINT}")


@eval_group.command(name="delete")
@click.argument("eval_ids", nargs=-1)
@click.option("--filter", "filter_", default="", help="delete every evaluation matching this")
@click.option("--namespace", "-n", default="*", show_default=True, help="scope of --filter")
@click.option("--job", default="", help="scope of --filter: one job")
@click.option("--page-size", default=0, type=click.IntRange(min=0),
              help="evaluations per call (0: the largest the server allows)")
@click.option("--yes", "-y", is_flag=True, help="do not ask for confirmation")
@click.option("--dry-run", is_flag=True, help="count what would be deleted, delete nothing")
@client_options
def delete_evals(eval_ids: tuple[str, ...], filter_: str, namespace: str, job: str,
                 page_size: int, yes: bool, dry_run: bool, opts: ClientOptions) -> None:
    """Delete evaluations by ID (all or nothing) or by --filter (paged).

    The eval broker must be paused (`drover operator scheduler pause`),
    except for --dry-run, which previews while scheduling goes on.
    """
    if bool(eval_ids) == bool(filter_):
        raise click.UsageError("give evaluation IDs or --filter, not both and not neither")
    if eval_ids:
        n = run(opts, lambda ch: _delete_by_ids(ch, eval_ids, dry_run, opts))
    else:
        n = _delete_by_filter(filter_, namespace, job, page_size, yes, dry_run, opts)
    if opts.json:
        output.print_json({"deleted": n, "dry_run": dry_run})
    else:
        click.echo(f"{'would delete' if dry_run else 'deleted'} {n} evaluations")


async def _delete_by_ids(ch: grpc.aio.Channel, eval_ids: tuple[str, ...], dry_run: bool,
                         opts: ClientOptions) -> int:
    """Delete the named evaluations in one call: all or nothing."""
    ids = [await prefix.evaluation_id(ch, "*", e, opts.timeout) for e in eval_ids]
    try:
        resp = await state(ch).DeleteEvaluations(state_pb2.DeleteEvaluationsRequest(
            ids=ids, dry_run=dry_run), timeout=opts.timeout)
    except grpc.RpcError as err:
        _refused(err)
        raise
    return int(resp.deleted)


def _delete_by_filter(filter_: str, namespace: str, job: str, page_size: int, yes: bool,
                      dry_run: bool, opts: ClientOptions) -> int:
    """Count what --filter matches, confirm, then delete it page by page."""
    # The count sends the very fields the delete sends (nothing spliced into
    # the filter), so the number confirmed is the set the server deletes.
    total = run(opts, lambda ch: _count_matching(ch, filter_, namespace, job, opts))
    if total == 0:
        return 0
    if not yes and not dry_run:
        click.confirm(f"Delete {total} evaluations?", default=False, abort=True, err=True)
    return run(opts, lambda ch: _delete_pages(ch, filter_, namespace, job, page_size,
                                              dry_run, total, opts))


async def _count_matching(ch: grpc.aio.Channel, filter_: str, namespace: str, job: str,
                          opts: ClientOptions) -> int:
    resp = await state(ch).CountEvaluations(
        state_pb2.CountEvaluationsRequest(namespace=namespace, filter=filter_, job_id=job),
        timeout=opts.timeout)
    return int(resp.count)


async def _delete_pages(ch: grpc.aio.Channel, filter_: str, namespace: str, job: str,
                        page_size: int, dry_run: bool, total: int,
                        opts: ClientOptions) -> int:
    """Delete page after page (each call needs the last one's token), with progress."""
    stub = state(ch)
    deleted = 0
    token = ""
    # The server spreads each page over several etcd txns in flight, so ask
    # for its largest page (it clamps the size to what it allows).
    size = page_size or LARGEST_PAGE
    with Progress(TextColumn("deleting"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=output.err_console,
                  disable=opts.json) as progress:
        task = progress.add_task("delete", total=total)
        while True:
            try:
                resp = await stub.DeleteEvaluations(state_pb2.DeleteEvaluationsRequest(
                    filter=filter_, namespace=namespace, job_id=job, page_size=size,
                    page_token=token, dry_run=dry_run), timeout=opts.timeout)
            except grpc.RpcError as err:
                _refused(err)
                raise
            deleted += resp.deleted
            progress.update(task, completed=min(deleted, total) if total else deleted)
            token = resp.next_page_token
            if not token:
                return deleted
