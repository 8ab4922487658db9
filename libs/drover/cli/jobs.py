"""`drover job ...`: run a job spec file, show its status, stop it."""

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
    """Jobs: run, status, stop."""


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
    click.echo(f"job {job.id!r} registered as version {resp.version}")
    click.echo(f"evaluation {resp.eval_id}")
    if resp.deployment_id:
        click.echo(f"deployment {resp.deployment_id}")
    for w in resp.warnings:
        click.echo(f"warning: {w}", err=True)


@job_group.command(name="status")
@click.argument("job_id", required=False)
@click.option("--namespace", "-n", default="default", show_default=True)
@click.option("--watch", "-w", is_flag=True,
              help="a live per-task-group table until the rollout is terminal")
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

    async def body(ch: grpc.aio.Channel) -> tuple[Any, Any]:
        stub = state_pb2_grpc.StateServiceStub(ch)
        full = await prefix.resolve(ch, "job", namespace, job_id, opts.timeout)
        job = await stub.GetJob(state_pb2.GetJobRequest(namespace=namespace, id=full),
                                timeout=opts.timeout)
        versions = await stub.ListJobVersions(
            state_pb2.ListJobVersionsRequest(namespace=namespace, id=full),
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
        ["Stop", job.stop], ["Status", enum_name(job.status, job_pb2.JobStatus, "JOB_STATUS_")],
    ])
    print_table("Task groups", ["Group", "Count", "Max parallel", "Canary"], (
        [g.name, g.count, g.update.max_parallel, g.update.canary] for g in job.task_groups))
    print_table("Versions", ["Version", "Stable", "Modify index"],
                ([v.version, v.stable, v.job_modify_index] for v in versions.versions))


@job_group.command(name="stop")
@click.argument("job_id")
@click.option("--namespace", "-n", default="default", show_default=True)
@click.option("--purge", is_flag=True, help="remove the job and its history")
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
@client_options
def list_jobs(listing: ListOptions, address: str, as_json: bool, timeout: float) -> None:
    """List jobs (what `drover job status` with no JOB_ID shows)."""
    show_jobs(options(address, as_json, timeout), listing)
