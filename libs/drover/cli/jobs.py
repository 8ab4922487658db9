"""`drover job ...`: run, plan, validate and inspect a job; its status,
allocations and list; stop it (start, history, revert, scale:
:mod:`drover.cli.job_versions`).

A spec that cannot be read is one line, ``FILE:LINE: what is wrong``
(:mod:`drover.jobspec.read`), never a usage banner; ``plan`` exits 255 for
it and ``run``/``validate`` 1, as Nomad's do.
"""

from __future__ import annotations

from typing import Any

import click
import grpc

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, deployment_pb2, job_pb2
from drover.cli import output, prefix
from drover.cli.client import (
    ClientOptions,
    CommandFailed,
    ListOptions,
    about,
    client_options,
    list_allocations,
    lister,
    namespace_option,
    run,
    run_list,
    state,
    unary,
)
from drover.cli.monitor import Events, monitor
from drover.cli.stale import query_options, stale_options, with_query
from drover.jobspec.read import SpecError, read_job

#: Nomad's exit code for a spec `job plan` cannot read (1 means "changes").
PLAN_ERROR = 255


def load_job(path: str) -> job_pb2.Job:
    """The Job in ``path``; a spec error is the command's one-line failure."""
    try:
        return read_job(path)
    except SpecError as e:
        raise CommandFailed(str(e)) from None


@click.group(name="job")
def job_group() -> None:
    """Jobs: run, plan, validate, status, inspect, allocs, stop, start,
    history, revert, scale."""


@about(job_group, "run", "spec", namespaced=False)
@click.option("--check-index", type=int, default=None,
              help="register only if the job's modify index is this (0: must be new)")
@click.option("--detach", "-d", is_flag=True,
              help="return once registered; do not monitor the evaluation and deployment")
def run_job(spec: str, check_index: int | None, detach: bool, opts: ClientOptions) -> None:
    """Register the job in SPEC (YAML or JSON) and monitor its evaluation and
    deployment until done (as Nomad's; exit 2: placements failed, 1: the
    deployment failed)."""
    job = load_job(spec)
    events = Events(opts.json)

    async def body(ch: grpc.aio.Channel) -> int:
        resp = await state(ch).RegisterJob(
            state_pb2.RegisterJobRequest(job=job, enforce_index=check_index is not None,
                                         job_modify_index=check_index or 0),
            timeout=opts.timeout)
        _registered(opts, job, resp, detach)
        if detach or not resp.eval_id:
            return 0
        return await monitor(ch, job.namespace or "default", resp.eval_id, opts.timeout,
                             events, resp.deployment_id)

    raise SystemExit(run(opts, body))


def _registered(opts: ClientOptions, job: job_pb2.Job, resp: Any, detach: bool) -> None:
    if opts.json and detach:
        output.print_json(resp)
        return
    if opts.json:  # the first of the monitor's JSON lines
        Events(True).say("registered", "", registration=output.to_dict(resp))
        return
    click.echo(f"Job {job.id!r} registered as version {resp.version} (job modify index "
               f"{resp.job_modify_index})")
    if detach:
        click.echo(f"Evaluation ID: {resp.eval_id}")
        if resp.deployment_id:
            click.echo(f"Deployment ID: {resp.deployment_id}")
    for w in resp.warnings:
        click.echo(f"warning: {w}", err=True)


@about(job_group, "validate", "spec", namespaced=False)
def validate_job(spec: str, opts: ClientOptions) -> None:
    """Check SPEC as the servers would register it, registering nothing."""
    job = load_job(spec)

    resp = unary(opts, state, "PlanJob", state_pb2.PlanJobRequest(job=job))
    if opts.json:
        output.print_json({"valid": True, "warnings": list(resp.warnings)})
        return
    for w in resp.warnings:
        click.echo(f"warning: {w}", err=True)
    click.echo("Job validation successful")


def status_text(job: job_pb2.Job) -> str:
    """Nomad's status column: ``dead (stopped)`` for a stopped job."""
    text = output.enum_name(job.status, job_pb2.JobStatus)
    return f"{text} (stopped)" if job.stop else text


def _type(job: job_pb2.Job) -> str:
    return output.enum_name(job.type, job_pb2.JobType)


async def _job(ch: grpc.aio.Channel, namespace: str, job_id: str, per_call: float) -> Any:
    full = await prefix.resolve(ch, "job", namespace, job_id, per_call)
    return await state(ch).GetJob(
        with_query(state_pb2.GetJobRequest(namespace=namespace, id=full), query_options()),
        timeout=per_call)


@job_group.command(name="status")
@click.argument("job_id", required=False)
@namespace_option
@click.option("--watch", "-w", "--monitor", "watch", is_flag=True,
              help="follow its task groups live until the rollout is terminal")
@stale_options
@client_options
def job_status(job_id: str | None, namespace: str, watch: bool, opts: ClientOptions) -> None:
    """Show a job: its summary, latest deployment and allocations (as
    Nomad's); with no JOB_ID, list jobs (as `job list`)."""
    if job_id is None:
        if watch:
            raise click.UsageError("--watch needs a JOB_ID")
        show_jobs(opts, ListOptions(namespace, "", "create_index", 100, "", 0))
        return
    if watch:
        from drover.cli.watch import watch_job

        async def follow(ch: grpc.aio.Channel) -> int:
            full = await prefix.resolve(ch, "job", namespace, job_id, opts.timeout)
            return await watch_job(ch, namespace, full, opts.timeout, opts.json)

        raise SystemExit(run(opts, follow))

    async def body(ch: grpc.aio.Channel) -> tuple[Any, Any, list[Any]]:
        job = (await _job(ch, namespace, job_id, opts.timeout)).job
        deps = await state(ch).ListDeployments(state_pb2.ListDeploymentsRequest(
            namespace=namespace, filter=f'job_id == "{job.id}"',
            order_by="create_index desc", page_size=1), timeout=opts.timeout)
        allocs = await list_allocations(ch, f'job_id == "{job.id}"', opts.timeout, namespace)
        return job, (deps.deployments[0] if deps.deployments else None), allocs

    job, dep, allocs = run(opts, body)
    allocs.sort(key=lambda a: -a.create_index)
    if output.print_detail(opts, {"job": job, "latest_deployment": dep, "allocations": allocs}, [
            ("ID", job.id), ("Name", job.name or job.id),
            ("Submit Date", output.when(job.submit_time)),
            ("Type", _type(job)), ("Priority", job.priority),
            ("Datacenters", ",".join(job.datacenters)), ("Namespace", job.namespace),
            ("Status", status_text(job)), ("Version", job.version), ("Stable", job.stable)]):
        return
    output.print_table("Summary", ["Task Group", "Queued", "Starting", "Running", "Failed",
                                   "Complete", "Lost"], (
        [name, s.queued, s.starting, s.running, s.failed, s.complete, s.lost]
        for name, s in sorted(job.summary.items())))
    if dep is not None:
        from drover.cli.watch import deployment_table

        click.echo("\nLatest Deployment")
        output.print_detail(opts, dep, [
            ("ID", dep.id),
            ("Status", output.enum_name(dep.status, deployment_pb2.DeploymentStatus)),
            ("Description", dep.status_description)])
        output.print_table("Deployed", *deployment_table(dep))
    if allocs:
        output.print_table("Allocations", ALLOC_COLUMNS, (alloc_row(a) for a in allocs))


#: Nomad's allocation table (``job status``, ``job allocs``).
ALLOC_COLUMNS = ["ID", "Node ID", "Task Group", "Version", "Desired", "Status", "Created",
                 "Modified"]


def alloc_row(a: allocation_pb2.Allocation) -> list[Any]:
    return [a.id, a.node_id, a.task_group, a.job_version,
            output.enum_name(a.desired_status, allocation_pb2.AllocDesiredStatus),
            output.enum_name(a.client_status, allocation_pb2.AllocClientStatus),
            output.ago(a.create_time), output.ago(a.modify_time)]


@about(job_group, "allocs", "job_id")
def job_allocs(job_id: str, namespace: str, opts: ClientOptions) -> None:
    """The job's allocations, newest first (as `nomad job allocs`)."""

    allocs = sorted(prefix.call(opts, "job", namespace, job_id, lambda ch, full: list_allocations(
        ch, f'job_id == "{full}"', opts.timeout, namespace)), key=lambda a: -a.create_index)
    output.print_list(opts, allocs, ALLOC_COLUMNS, alloc_row, empty="No allocations placed")


@about(job_group, "inspect", "job_id")
@click.option("--version", type=click.IntRange(min=0), default=None,
              help="a kept version (default: the latest)")
@stale_options
def inspect_job(job_id: str, namespace: str, version: int | None, opts: ClientOptions) -> None:
    """The job as the servers keep it, as JSON (as `nomad job inspect`)."""

    async def body(ch: grpc.aio.Channel) -> Any:
        job = (await _job(ch, namespace, job_id, opts.timeout)).job
        if version is None or version == job.version:
            return job
        kept = await state(ch).ListJobVersions(state_pb2.ListJobVersionsRequest(
            namespace=namespace, id=job.id), timeout=opts.timeout)
        for v in kept.versions:
            if v.version == version:
                return v
        raise CommandFailed(f"job {job.id!r} has no kept version {version}; "
                            "`drover job history` lists them")

    output.print_json({"job": run(opts, body)})


@about(job_group, "stop", "job_id")
@click.option("--purge", is_flag=True,
              help="remove the job and its history (running allocations are stopped first)")
def stop_job(job_id: str, namespace: str, purge: bool, opts: ClientOptions) -> None:
    """Stop (or purge) a job."""

    resp = prefix.call(opts, "job", namespace, job_id, lambda ch, full: state(ch).DeregisterJob(
        state_pb2.DeregisterJobRequest(namespace=namespace, id=full, purge=purge),
        timeout=opts.timeout))
    if opts.json:
        output.print_json(resp)
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
JOB_COLUMNS = ["ID", "Namespace", "Type", "Priority", "Status", "Submit Date"]


def job_row(job: job_pb2.Job) -> list[Any]:
    """One job as `nomad job status` lists it: a stopped job's status reads
    ``dead (stopped)``."""
    return [job.id, job.namespace, _type(job), job.priority, status_text(job),
            output.when(job.submit_time)]


def show_jobs(opts: ClientOptions, listing: ListOptions) -> None:
    """Every job of the listing, by id (Nomad's order), a table (or JSON);
    "No running jobs" for none."""
    jobs = run_list(opts, listing, state, "ListJobs", state_pb2.ListJobsRequest, "jobs")
    jobs.sort(key=lambda j: (j.id, j.namespace))
    output.print_list(opts, jobs, JOB_COLUMNS, job_row, namespace=listing.namespace,
                      empty="No running jobs")


@lister(job_group, "list", 'CEL over job fields, e.g. type == "service"')
def list_jobs(listing: ListOptions, opts: ClientOptions) -> None:
    """List jobs (what `drover job status` with no JOB_ID shows)."""
    show_jobs(opts, listing)
