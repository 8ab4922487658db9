"""`drover job plan|start|history|revert|scale`: what makes a job's next
version, and the versions it keeps (Nomad's shapes)."""

from __future__ import annotations

from typing import Any

import click
import grpc

from drover.api.state.v1 import state_pb2
from drover.cli import output, prefix
from drover.cli.client import (
    ClientOptions,
    CommandFailed,
    about,
    client_options,
    namespace_option,
    run,
    state,
)
from drover.cli.jobs import PLAN_ERROR, job_group, load_job
from drover.jobspec import diff as spec_diff


def _new_version(opts: ClientOptions, resp: Any, headline: str) -> None:
    """The answer of a call that registered a new version (start, revert,
    scale): the whole response with --json, else what happened, its
    evaluation and deployment, and any warning (to stderr)."""
    if opts.json:
        output.print_json(resp)
        return
    click.echo(headline)
    click.echo(f"Evaluation ID: {resp.eval_id}")
    if resp.deployment_id:
        click.echo(f"Deployment ID: {resp.deployment_id}")
    for w in getattr(resp, "warnings", ()):
        click.echo(f"warning: {w}", err=True)


def _call(opts: ClientOptions, namespace: str, job_id: str, method: str,
          request: Any) -> Any:
    """``StateService.method(request)`` with the job id resolved from a prefix."""

    async def then(ch: grpc.aio.Channel, full: str) -> Any:
        request.id = full
        return await getattr(state(ch), method)(request, timeout=opts.timeout)

    return prefix.call(opts, "job", namespace, job_id, then)


@about(job_group, "start", "job_id")
def start_job(job_id: str, namespace: str, opts: ClientOptions) -> None:
    """Run a stopped job again: its latest version before the stop, as a new version."""
    resp = _call(opts, namespace, job_id, "StartJob",
                 state_pb2.StartJobRequest(namespace=namespace))
    _new_version(opts, resp, f"job {job_id!r} started as version {resp.version} (the spec"
                             f" of version {resp.from_version})")


@about(job_group, "history", "job_id")
@click.option("--diff", "-p", "show_diff", is_flag=True,
              help="each version's changes from the one before it")
def job_history(job_id: str, namespace: str, show_diff: bool, opts: ClientOptions) -> None:
    """The job's kept versions, newest first (as `nomad job history`)."""
    resp = _call(opts, namespace, job_id, "ListJobVersions",
                 state_pb2.ListJobVersionsRequest(namespace=namespace))
    versions = sorted(resp.versions, key=lambda v: -v.version)
    older = {id(v): (versions[i + 1] if i + 1 < len(versions) else None)
             for i, v in enumerate(versions)}
    if opts.json:
        output.print_json([{"version": v.version, "stable": v.stable,
                            "submit_time": v.submit_time.ToJsonString(),
                            "job_modify_index": v.job_modify_index,
                            **({"diff": [d.__dict__ for d in spec_diff.diff(older[id(v)], v)]}
                               if show_diff else {})} for v in versions])
        return
    blocks = []
    for v in versions:
        lines = [f"Version     = {v.version}", f"Stable      = {output.yes_no(v.stable)}",
                 f"Submit Date = {output.when(v.submit_time)}"]
        prev = older[id(v)]
        if show_diff and prev is not None:
            lines.append("Diff        =")
            lines += [d.line() for d in spec_diff.diff(prev, v)] or ["(no change)"]
        blocks.append("\n".join(lines))
    click.echo("\n\n".join(blocks))


@job_group.command(name="revert")
@click.argument("job_id")
@click.argument("version", type=click.IntRange(min=0))
@namespace_option
@click.option("--enforce-prior-version", type=click.IntRange(min=0), default=None,
              help="revert only if the job is still at this version")
@client_options
def revert_job(job_id: str, version: int, namespace: str, enforce_prior_version: int | None,
               opts: ClientOptions) -> None:
    """Register kept VERSION's spec as the job's next version."""
    req = state_pb2.RevertJobRequest(namespace=namespace, version=version)
    if enforce_prior_version is not None:
        req.enforce_prior_version = enforce_prior_version
    resp = _call(opts, namespace, job_id, "RevertJob", req)
    _new_version(opts, resp, f"job {job_id!r} reverted to the spec of version"
                             f" {resp.reverted_to} as version {resp.version}")


@job_group.command(name="scale")
@click.argument("job_id")
@click.argument("group")
@click.argument("count", type=click.IntRange(min=0))
@namespace_option
@click.option("--check-index", type=click.IntRange(min=0), default=None,
              help="scale only if the job's modify index is still this")
@click.option("--message", "-m", default="", help="why (kept in the answer)")
@client_options
def scale_job(job_id: str, group: str, count: int, namespace: str, check_index: int | None,
              message: str, opts: ClientOptions) -> None:
    """Set GROUP's count to COUNT (a new version; the scheduler places or stops)."""
    req = state_pb2.ScaleJobRequest(namespace=namespace, group=group, count=count,
                                    message=message)
    if check_index is not None:
        req.enforce_index = check_index
    resp = _call(opts, namespace, job_id, "ScaleJob", req)
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
    """``nomad job plan``'s output, drover's words for the fields (values as
    the tables show them: ``service``, ``50``)."""
    marker = {"Added": "+", "Deleted": "-", "Edited": "+/-"}.get(resp.diff_type, "")
    lines = [f'{marker} Job: "{job_id}"'.strip()]
    lines += [spec_diff.FieldDiff(d.type, d.path, d.old, d.new).line() for d in resp.diff]
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


@about(job_group, "plan", "spec", namespaced=False)
def plan_job(spec: str, opts: ClientOptions) -> None:
    """Dry-run SPEC: the diff and what the scheduler would do (exit 0: no
    allocation created or destroyed, 1: some would be, 255: error)."""
    try:
        job = load_job(spec)
        opts = opts

        async def body(ch: grpc.aio.Channel) -> state_pb2.PlanJobResponse:
            return await state(ch).PlanJob(state_pb2.PlanJobRequest(job=job),
                                           timeout=opts.timeout)

        resp = run(opts, body)
    except CommandFailed as e:
        e.show()
        raise SystemExit(PLAN_ERROR) from e
    if opts.json:
        output.print_json(resp)
    else:
        click.echo(plan_text(resp, job.id, spec))
        for w in resp.warnings:
            click.echo(f"warning: {w}", err=True)
    raise SystemExit(plan_exit_code(resp))
