"""`drover job ...`: run a job spec file, show its status, stop and start it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import grpc
import yaml
from google.protobuf import json_format

from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import job_pb2
from drover.cli import prefix
from drover.cli._client import (
    ClientOptions,
    ListOptions,
    client_options,
    enum_name,
    list_options,
    options,
    print_json,
    print_list,
    print_table,
    run,
    run_list,
    to_dict,
)
from drover.cli.spec import parse_spec
from drover.cli.stale import query_options, stale_options, with_query
from drover.jobspec import diff as spec_diff


def load_job(path: str) -> job_pb2.Job:
    """A Job from a JSON or YAML file (proto JSON names or field names; enum
    values as users write them, ``type: service``, or as proto names)."""
    text = Path(path).read_text()
    try:
        data: Any = json.loads(text) if path.endswith(".json") else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as e:
        raise click.BadParameter(f"{path}: not valid JSON/YAML: {e}") from e
    if isinstance(data, dict) and "job" in data and isinstance(data["job"], dict):
        data = data["job"]
    if not isinstance(data, dict):
        raise click.BadParameter(f"{path}: expected a job object at the top level")
    try:
        return parse_spec(data, job_pb2.Job())
    except json_format.ParseError as e:
        raise click.BadParameter(f"{path}: {e}") from e


@click.group(name="job")
def job_group() -> None:
    """Jobs: plan, run, status, stop, start, history, revert, scale."""


@job_group.command(name="run")
@click.argument("spec", type=click.Path(exists=True, dir_okay=False))
@click.option("--check-index", type=int, default=None,
              help="register only if the job's modify index is this (0: must be new)")
@client_options
def run_job(spec: str, check_index: int | None, address: str, as_json: bool,
            timeout: float) -> None:
    """Register the job in SPEC (JSON or YAML)."""
    job = load_job(spec)
    opts = options(address, as_json, timeout)

    async def body(ch: grpc.aio.Channel) -> state_pb2.RegisterJobResponse:
        return await state_pb2_grpc.StateServiceStub(ch).RegisterJob(
            state_pb2.RegisterJobRequest(job=job, enforce_index=check_index is not None,
                                         job_modify_index=check_index or 0),
            timeout=opts.timeout)

    resp = run(opts, body)
    if opts.json:
        print_json(resp)
        return
    click.echo(f"job {job.id!r} registered as version {resp.version}"
               f" (job modify index {resp.job_modify_index})")
    click.echo(f"evaluation {resp.eval_id}")
    if resp.deployment_id:
        click.echo(f"deployment {resp.deployment_id}")
    for w in resp.warnings:
        click.echo(f"warning: {w}", err=True)


def status_text(job: job_pb2.Job) -> str:
    """Nomad's status column: ``dead (stopped)`` for a stopped job."""
    text = enum_name(job.status, job_pb2.JobStatus, "JOB_STATUS_")
    return f"{text} (stopped)" if job.stop else text


@job_group.command(name="status")
@click.argument("job_id", required=False)
@click.option("--namespace", "-n", default="default", show_default=True)
@click.option("--watch", "-w", is_flag=True,
              help="a live per-task-group table until the rollout is terminal")
@stale_options
@client_options
def job_status(job_id: str | None, namespace: str, watch: bool, address: str, as_json: bool,
               timeout: float) -> None:
    """Show a job and its versions; with no JOB_ID, list jobs (as `job list`)."""
    opts = options(address, as_json, timeout)
    if job_id is None:
        if watch:
            raise click.UsageError("--watch needs a JOB_ID")
        show_jobs(opts, ListOptions(namespace, "", "create_index", 100, "", 0))
        return
    if watch:
        from drover.cli.watch import watch_job
        raise SystemExit(run(opts, lambda ch: watch_job(ch, namespace, job_id, opts.timeout)))

    query = query_options()

    async def body(ch: grpc.aio.Channel) -> tuple[Any, Any]:
        stub = state_pb2_grpc.StateServiceStub(ch)
        full = await prefix.resolve(ch, "job", namespace, job_id, opts.timeout)
        job = await stub.GetJob(
            with_query(state_pb2.GetJobRequest(namespace=namespace, id=full), query),
            timeout=opts.timeout)
        versions = await stub.ListJobVersions(
            with_query(state_pb2.ListJobVersionsRequest(namespace=namespace, id=full), query),
            timeout=opts.timeout)
        return job, versions

    job_resp, versions = run(opts, body)
    job = job_resp.job
    if opts.json:
        print_json({"job": to_dict(job),
                    "versions": [v.version for v in versions.versions]})
        return
    print_table(None, ["Field", "Value"], [
        ["ID", job.id], ["Namespace", job.namespace],
        ["Type", enum_name(job.type, job_pb2.JobType, "JOB_TYPE_")],
        ["Priority", job.priority], ["Version", job.version], ["Stable", job.stable],
        ["Stop", job.stop], ["Status", status_text(job)],
    ])
    # Nomad's Summary block, as the state service keeps it (no recount here).
    print_table("Summary", ["Task Group", "Queued", "Starting", "Running", "Failed",
                            "Complete", "Lost"], (
        [name, s.queued, s.starting, s.running, s.failed, s.complete, s.lost]
        for name, s in sorted(job.summary.items())))
    print_table("Task groups", ["Group", "Count", "Max parallel", "Canary"], (
        [g.name, g.count, g.update.max_parallel, g.update.canary] for g in job.task_groups))
    print_table("Versions", ["Version", "Stable", "Modify index"],
                ([v.version, v.stable, v.job_modify_index] for v in versions.versions))


@job_group.command(name="stop")
@click.argument("job_id")
@click.option("--namespace", "-n", default="default", show_default=True)
@click.option("--purge", is_flag=True,
              help="remove the job and its history (running allocations are stopped first)")
@client_options
def stop_job(job_id: str, namespace: str, purge: bool, address: str, as_json: bool,
             timeout: float) -> None:
    """Stop (or purge) a job."""
    opts = options(address, as_json, timeout)

    async def body(ch: grpc.aio.Channel) -> state_pb2.DeregisterJobResponse:
        full = await prefix.resolve(ch, "job", namespace, job_id, opts.timeout)
        return await state_pb2_grpc.StateServiceStub(ch).DeregisterJob(
            state_pb2.DeregisterJobRequest(namespace=namespace, id=full, purge=purge),
            timeout=opts.timeout)

    resp = run(opts, body)
    if opts.json:
        print_json(resp)
    elif purge and resp.purge_pending:
        click.echo(f"job {job_id!r} stopped first: {resp.stopped_allocations} allocations asked"
                   " to stop" + (f"; evaluation {resp.eval_id}" if resp.eval_id else ""))
        click.echo(f"once they have stopped, the purge removes {resp.pending_versions} versions,"
                   f" {resp.pending_deployments} deployments, {resp.pending_evaluations}"
                   f" evaluations and {resp.pending_allocations} allocations (run this again"
                   " to finish at once then; the GC finishes it otherwise)")
    elif purge:
        click.echo(f"job {job_id!r} purged: {resp.purged_versions} versions,"
                   f" {resp.purged_deployments} deployments, {resp.purged_evaluations}"
                   f" evaluations, {resp.purged_allocations} allocations removed"
                   f" in {resp.purge_txns} txns")
    else:
        click.echo(f"job {job_id!r} stopped; evaluation {resp.eval_id}")


#: Nomad's `job status` list columns (Namespace too when listing several).
JOB_COLUMNS = ["ID", "Type", "Priority", "Status", "Submit Date"]


def job_row(job: job_pb2.Job, with_namespace: bool) -> list[Any]:
    """One job as `nomad job status` lists it: a stopped job's status reads
    ``dead (stopped)``."""
    status = enum_name(job.status, job_pb2.JobStatus, "JOB_STATUS_")
    if job.stop:
        status += " (stopped)"
    submitted = (job.submit_time.ToDatetime().strftime("%Y-%m-%dT%H:%M:%SZ")
                 if job.HasField("submit_time") else "")
    row = [job.id, enum_name(job.type, job_pb2.JobType, "JOB_TYPE_"), job.priority, status,
           submitted]
    if with_namespace:
        row.insert(1, job.namespace)
    return row


def show_jobs(opts: ClientOptions, listing: ListOptions) -> None:
    """Every job of the listing, a table (or JSON); "No running jobs" for none."""
    jobs = run_list(opts, listing, state_pb2_grpc.StateServiceStub, "ListJobs",
                    state_pb2.ListJobsRequest, "jobs")
    if not jobs and not opts.json:
        click.echo("No running jobs")
        return
    several = listing.namespace == "*" or "*" in listing.namespace
    columns = [*JOB_COLUMNS[:1], "Namespace", *JOB_COLUMNS[1:]] if several else JOB_COLUMNS
    print_list(opts, jobs, columns, lambda j: job_row(j, several))


@job_group.command(name="list")
@list_options('CEL over job fields, e.g. type == "service"')
@stale_options
@client_options
def list_jobs(listing: ListOptions, address: str, as_json: bool, timeout: float) -> None:
    """List jobs (what `drover job status` with no JOB_ID shows)."""
    show_jobs(options(address, as_json, timeout), listing)

def _new_version(opts: ClientOptions, resp: Any, headline: str) -> None:
    """The answer of a call that registered a new version (start, revert,
    scale): the whole response with --json, else what happened, its
    evaluation and deployment, and any warning (to stderr)."""
    if opts.json:
        print_json(resp)
        return
    click.echo(headline)
    click.echo(f"evaluation {resp.eval_id}")
    if resp.deployment_id:
        click.echo(f"deployment {resp.deployment_id}")
    for w in getattr(resp, "warnings", ()):
        click.echo(f"warning: {w}", err=True)


@job_group.command(name="start")
@click.argument("job_id")
@click.option("--namespace", "-n", default="default", show_default=True)
@client_options
def start_job(job_id: str, namespace: str, address: str, as_json: bool, timeout: float) -> None:
    """Run a stopped job again: its latest version before the stop, as a new version."""
    opts = options(address, as_json, timeout)

    async def body(ch: grpc.aio.Channel) -> state_pb2.StartJobResponse:
        return await state_pb2_grpc.StateServiceStub(ch).StartJob(
            state_pb2.StartJobRequest(namespace=namespace, id=job_id), timeout=opts.timeout)

    resp = run(opts, body)
    _new_version(opts, resp, f"job {job_id!r} started as version {resp.version} (the spec"
                             f" of version {resp.from_version})")


@job_group.command(name="history")
@click.argument("job_id")
@click.option("--namespace", "-n", default="default", show_default=True)
@click.option("--diff", "-p", "show_diff", is_flag=True,
              help="each version's changes from the one before it")
@client_options
def job_history(job_id: str, namespace: str, show_diff: bool, address: str, as_json: bool,
                timeout: float) -> None:
    """The job's kept versions, newest first (as `nomad job history`)."""
    opts = options(address, as_json, timeout)

    async def body(ch: grpc.aio.Channel) -> Any:
        full = await prefix.resolve(ch, "job", namespace, job_id, opts.timeout)
        return await state_pb2_grpc.StateServiceStub(ch).ListJobVersions(
            state_pb2.ListJobVersionsRequest(namespace=namespace, id=full),
            timeout=opts.timeout)

    versions = sorted(run(opts, body).versions, key=lambda v: -v.version)
    older = {id(v): (versions[i + 1] if i + 1 < len(versions) else None)
             for i, v in enumerate(versions)}
    if opts.json:
        out = []
        for v in versions:
            row: dict[str, Any] = {"version": v.version, "stable": v.stable,
                                   "submit_time": v.submit_time.ToJsonString(),
                                   "job_modify_index": v.job_modify_index}
            if show_diff:
                row["diff"] = [d.__dict__ for d in spec_diff.diff(older[id(v)], v)]
            out.append(row)
        print_json(out)
        return
    blocks = []
    for v in versions:
        lines = [f"Version     = {v.version}", f"Stable      = {str(v.stable).lower()}",
                 f"Submit Date = {v.submit_time.ToJsonString()}"]
        prev = older[id(v)]
        if show_diff and prev is not None:
            lines.append("Diff        =")
            lines += [d.line() for d in spec_diff.diff(prev, v)] or ["(no change)"]
        blocks.append("\n".join(lines))
    click.echo("\n\n".join(blocks))


@job_group.command(name="revert")
@click.argument("job_id")
@click.argument("version", type=click.IntRange(min=0))
@click.option("--namespace", "-n", default="default", show_default=True)
@click.option("--enforce-prior-version", type=click.IntRange(min=0), default=None,
              help="revert only if the job is still at this version")
@client_options
def revert_job(job_id: str, version: int, namespace: str, enforce_prior_version: int | None,
               address: str, as_json: bool, timeout: float) -> None:
    """Register kept VERSION's spec as the job's next version."""
    opts = options(address, as_json, timeout)
    req = state_pb2.RevertJobRequest(namespace=namespace, id=job_id, version=version)
    if enforce_prior_version is not None:
        req.enforce_prior_version = enforce_prior_version

    async def body(ch: grpc.aio.Channel) -> state_pb2.RevertJobResponse:
        return await state_pb2_grpc.StateServiceStub(ch).RevertJob(req, timeout=opts.timeout)

    resp = run(opts, body)
    _new_version(opts, resp, f"job {job_id!r} reverted to the spec of version"
                             f" {resp.reverted_to} as version {resp.version}")


@job_group.command(name="scale")
@click.argument("job_id")
@click.argument("group")
@click.argument("count", type=click.IntRange(min=0))
@click.option("--namespace", "-n", default="default", show_default=True)
@click.option("--check-index", type=click.IntRange(min=0), default=None,
              help="scale only if the job's modify index is still this")
@click.option("--message", "-m", default="", help="why (kept in the answer)")
@client_options
def scale_job(job_id: str, group: str, count: int, namespace: str, check_index: int | None,
              message: str, address: str, as_json: bool, timeout: float) -> None:
    """Set GROUP's count to COUNT (a new version; the scheduler places or stops)."""
    opts = options(address, as_json, timeout)
    req = state_pb2.ScaleJobRequest(namespace=namespace, id=job_id, group=group, count=count,
                                    message=message)
    if check_index is not None:
        req.enforce_index = check_index

    async def body(ch: grpc.aio.Channel) -> state_pb2.ScaleJobResponse:
        return await state_pb2_grpc.StateServiceStub(ch).ScaleJob(req, timeout=opts.timeout)

    resp = run(opts, body)
    _new_version(opts, resp, f"job {job_id!r} group {group!r} scaled from"
                             f" {resp.previous_count} to {count} (version {resp.version})")


#: Nomad's group annotations, in its order.
_UPDATE_WORDS = (("place", "create"), ("stop", "destroy"), ("in_place_update", "in-place update"),
                 ("destructive_update", "create/destroy update"), ("canary", "canary"),
                 ("ignore", "ignore"))


def plan_exit_code(resp: state_pb2.PlanJobResponse) -> int:
    """Nomad's: 1 when allocations would be created or destroyed, else 0."""
    if resp.diff_type == "None":
        return 0
    changes = sum(u.place + u.stop + u.destructive_update + u.canary
                  for u in resp.desired_updates.values())
    # Nomad counts the placements that will fail among its "place".
    changes += sum(f.count for f in resp.failed_placements.values())
    return 1 if changes else 0


def plan_text(resp: state_pb2.PlanJobResponse, job_id: str, spec: str) -> str:
    """``nomad job plan``'s output, drover's words for the fields."""
    marker = {"Added": "+", "Deleted": "-", "Edited": "+/-"}.get(resp.diff_type, "")
    lines = [f'{marker} Job: "{job_id}"'.strip()]
    lines += [f"{_MARK[d.type]} {d.path}: " + (f'"{d.old}" => "{d.new}"' if d.type == "Edited"
                                              else f'"{d.new or d.old}"') for d in resp.diff]
    for name, u in sorted(resp.desired_updates.items()):
        words = [f"{getattr(u, f)} {w}" for f, w in _UPDATE_WORDS if getattr(u, f)]
        lines.append(f'Task Group: "{name}" ({", ".join(words) or "no change"})')
    lines += ["", "Scheduler dry-run:"]
    if not resp.failed_placements:
        lines.append("- All tasks successfully allocated.")
    else:
        lines.append("- WARNING: Failed to place all allocations.")
        for name, f in sorted(resp.failed_placements.items()):
            lines.append(f'  Task Group "{name}" (failed to place {f.count} allocation(s)):')
            lines += [f"    * {r}" for r in f.reasons]
    lines += ["", f"Job Modify Index: {resp.job_modify_index}",
              "To submit the job with version verification run:", "",
              f"drover job run --check-index {resp.job_modify_index} {spec}", "",
              "When running the job with the check-index flag, the job will only be run if",
              "the job modify index given matches the server-side version. If the index has",
              "changed, another user has modified the job and the plan's results are",
              "potentially invalid."]
    return "\n".join(lines)


_MARK = {"Added": "+", "Deleted": "-", "Edited": "+/-"}


@job_group.command(name="plan")
@click.argument("spec", type=click.Path(exists=True, dir_okay=False))
@client_options
def plan_job(spec: str, address: str, as_json: bool, timeout: float) -> None:
    """Dry-run SPEC: the diff and what the scheduler would do (exit 0: no
    allocation created or destroyed, 1: some would be, 255: error)."""
    try:
        job = load_job(spec)
        opts = options(address, as_json, timeout)

        async def body(ch: grpc.aio.Channel) -> state_pb2.PlanJobResponse:
            return await state_pb2_grpc.StateServiceStub(ch).PlanJob(
                state_pb2.PlanJobRequest(job=job), timeout=opts.timeout)

        resp = run(opts, body)
    except click.ClickException as e:
        e.show()
        raise SystemExit(255) from e  # Nomad's exit code for an error (1 means "changes")
    if opts.json:
        print_json(resp)
    else:
        click.echo(plan_text(resp, job.id, spec))
        for w in resp.warnings:
            click.echo(f"warning: {w}", err=True)
    raise SystemExit(plan_exit_code(resp))
