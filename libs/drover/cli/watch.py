"""Live views: a deployment's or a job's task groups, from the event stream.

Both read once, then Subscribe from the index of that read and re-render on
every change until the deployment is terminal (or, for a job without a
deployment, until every allocation of its current version has settled).
On a terminal the table is redrawn in place (rich Live); otherwise each
change prints its title line and table again (80 columns, short ids); with
``--json`` each change is one JSON object on one line. The exit code is 0
when the deployment succeeded (or the job settled), 1 when it failed or was
cancelled.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import grpc
from rich.live import Live
from rich.text import Text

from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.api.types.v1 import allocation_pb2, deployment_pb2, job_pb2
from drover.cli import output
from drover.cli.client import list_allocations

ACTIVE = (deployment_pb2.DEPLOYMENT_STATUS_RUNNING, deployment_pb2.DEPLOYMENT_STATUS_PAUSED)
SUCCESSFUL = deployment_pb2.DEPLOYMENT_STATUS_SUCCESSFUL
_C = allocation_pb2


def _dstatus(v: int) -> str:
    return output.enum_name(v, deployment_pb2.DeploymentStatus)


def _deadline(g: deployment_pb2.DeploymentGroupState) -> str:
    """The time by which the group must make progress (Nomad's Progress
    Deadline, ``RequireProgressBy``), local with its zone; ``N/A`` before it is set."""
    if not g.require_progress_by.ByteSize():
        return "N/A"
    at = g.require_progress_by.ToDatetime(tzinfo=UTC).astimezone()
    return at.strftime("%H:%M:%S %Z" if at.date() == datetime.now().astimezone().date()
                       else "%b %d %H:%M %Z")


def deployment_rows(d: deployment_pb2.Deployment) -> list[list[Any]]:
    """One row per group, in :data:`DEPLOYMENT_COLUMNS`: Placed is what the
    deployment placed so far (it only grows), Promoted is ``N/A`` for a
    group without canaries."""
    return [[name, g.desired_total, f"{len(g.placed_canaries)}/{g.desired_canaries}",
             g.placed_allocs, g.healthy_allocs, g.unhealthy_allocs,
             ("yes" if g.promoted else "no") if g.desired_canaries else "N/A", _deadline(g)]
            for name, g in sorted(d.task_groups.items())]


def deployment_table(d: deployment_pb2.Deployment) -> tuple[list[str], list[list[Any]]]:
    """Columns and rows of a deployment, as Nomad's `deployment status`: the
    Canaries and Promoted columns only when a group has canaries."""
    rows = deployment_rows(d)
    if any(g.desired_canaries for g in d.task_groups.values()):
        return list(DEPLOYMENT_COLUMNS), rows
    keep = [i for i, c in enumerate(DEPLOYMENT_COLUMNS) if c not in ("Canaries", "Promoted")]
    return [DEPLOYMENT_COLUMNS[i] for i in keep], [[r[i] for i in keep] for r in rows]


#: "Deadline" is Nomad's Progress Deadline (a shorter header: 80 columns).
DEPLOYMENT_COLUMNS = ["Group", "Desired", "Canaries", "Placed", "Healthy", "Unhealthy",
                      "Promoted", "Deadline"]
JOB_COLUMNS = ["Group", "Desired", "Placed", "Running", "Healthy", "Unhealthy", "Failed",
               "Lost", "Complete"]


def job_rows(job: job_pb2.Job, allocs: Iterable[allocation_pb2.Allocation]) -> list[list[Any]]:
    rows = []
    mine = [a for a in allocs if a.job_version == job.version]
    for tg in job.task_groups:
        g = [a for a in mine if a.task_group == tg.name]
        live = [a for a in g if a.desired_status == _C.ALLOC_DESIRED_STATUS_RUN]
        health = [a.deployment_status.healthy for a in live
                  if a.deployment_status.HasField("healthy")]
        rows.append([tg.name, tg.count, len(live),
                     sum(a.client_status == _C.ALLOC_CLIENT_STATUS_RUNNING for a in live),
                     sum(health), len(health) - sum(health),
                     sum(a.client_status == _C.ALLOC_CLIENT_STATUS_FAILED for a in g),
                     sum(a.client_status == _C.ALLOC_CLIENT_STATUS_LOST for a in g),
                     sum(a.client_status == _C.ALLOC_CLIENT_STATUS_COMPLETE for a in g)])
    return rows


class _Render:
    """Live table on a terminal; the title and table per change otherwise;
    one JSON object per change with ``--json``."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self.live: Live | None = None
        self._last = ""

    def __enter__(self) -> _Render:
        if output.console.is_terminal and not self.as_json:
            self.live = Live(console=output.console, refresh_per_second=4)
            self.live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.live is not None:
            self.live.__exit__(*exc)

    def show(self, title: str, columns: list[str], rows: list[list[Any]],
             snapshot: dict[str, Any]) -> None:
        if self.as_json:
            line = repr(snapshot)
            if line != self._last:
                output.print_json_line(snapshot)
                self._last = line
            return
        text = "\n".join([_fit(title), *output.table_lines(columns, rows)])
        if self.live is not None:
            self.live.update(Text(text))
        elif text != self._last:
            print(text, flush=True)
            self._last = text


def _fit(line: str) -> str:
    """The title wrapped (never cut: its end says what happened) to the terminal."""
    return textwrap.fill(line, output.width(), subsequent_indent="  ", break_on_hyphens=False)


def _title(d: deployment_pb2.Deployment) -> str:
    return (f"deployment {output.short_id(d.id)} job {d.job_id} v{d.job_version}: "
            f"{_dstatus(d.status)} - {d.status_description}")


def _groups(columns: list[str], rows: list[list[Any]]) -> list[dict[str, Any]]:
    return [{c.lower(): v for c, v in zip(columns, r, strict=True)} for r in rows]


async def watch_deployment(ch: grpc.aio.Channel, namespace: str, deployment_id: str,
                           per_call: float, as_json: bool = False) -> int:
    stub = state_pb2_grpc.StateServiceStub(ch)
    got = await stub.GetDeployment(state_pb2.GetDeploymentRequest(
        namespace=namespace, id=deployment_id), timeout=per_call)
    d = got.deployment

    def show(out: _Render) -> None:
        columns, rows = deployment_table(d)
        out.show(_title(d), columns, rows, {
            "deployment_id": d.id, "job_id": d.job_id, "job_version": d.job_version,
            "status": _dstatus(d.status), "description": d.status_description,
            "groups": _groups(columns, rows)})

    with _Render(as_json) as out:
        show(out)
        if d.status in ACTIVE:
            stream = stub.Subscribe(state_pb2.SubscribeRequest(
                topics=[state_pb2.TOPIC_DEPLOYMENT], namespace=namespace,
                from_index=got.meta.index))
            try:
                async for resp in stream:
                    for ev in resp.events:
                        if ev.HasField("deployment") and ev.deployment.id == deployment_id:
                            d = ev.deployment
                    show(out)
                    if d.status not in ACTIVE:
                        break
            finally:
                stream.cancel()
    return 0 if d.status == SUCCESSFUL else 1


class _JobView:
    """What `job status --watch` shows: the job, its allocations, its newest deployment."""

    def __init__(self, job: job_pb2.Job, allocs: dict[str, allocation_pb2.Allocation],
                 dep: deployment_pb2.Deployment | None) -> None:
        self.job, self.allocs, self.dep = job, allocs, dep

    def current_dep(self) -> deployment_pb2.Deployment | None:
        dep = self.dep
        return dep if dep is not None and dep.job_version == self.job.version else None

    def title(self) -> str:
        d = self.current_dep()
        tail = (f"deployment {output.short_id(d.id)} {_dstatus(d.status)} - {d.status_description}"
                if d else "no deployment")
        return f"job {self.job.id} v{self.job.version}: {tail}"

    def settled(self) -> bool:
        job = self.job
        d = self.current_dep()
        if d is not None:
            return d.status not in ACTIVE
        if job.type == job_pb2.JOB_TYPE_SERVICE and any(
                tg.HasField("update") for tg in job.task_groups):
            return False  # its deployment has not been seen yet
        rows = job_rows(job, self.allocs.values())
        if job.type == job_pb2.JOB_TYPE_BATCH:
            return all(r[8] + r[6] >= r[1] for r in rows)
        return all(r[3] >= r[1] for r in rows)

    def show(self, out: _Render) -> None:
        rows = job_rows(self.job, self.allocs.values())
        d = self.current_dep()
        out.show(self.title(), JOB_COLUMNS, rows, {
            "job_id": self.job.id, "version": self.job.version,
            "deployment_id": d.id if d else "", "status": _dstatus(d.status) if d else "",
            "groups": _groups(JOB_COLUMNS, rows)})

    def apply(self, ev: state_pb2.Event) -> None:
        """Take one event of the job's stream in, keeping the newest of each thing."""
        # The stream replays from the job's read index, which can be older
        # than the allocation list: keep the newest.
        job_id, dep = self.job.id, self.dep
        if ev.HasField("job") and ev.job.id == job_id:
            if ev.job.modify_index >= self.job.modify_index:
                self.job = ev.job
        elif ev.HasField("deployment") and ev.deployment.job_id == job_id:
            if dep is None or ev.deployment.create_index > dep.create_index or (
                    ev.deployment.id == dep.id
                    and ev.deployment.modify_index >= dep.modify_index):
                self.dep = ev.deployment
        elif ev.HasField("allocation") and ev.allocation.job_id == job_id:
            old = self.allocs.get(ev.allocation.id)
            if old is None or ev.allocation.modify_index >= old.modify_index:
                self.allocs[ev.allocation.id] = ev.allocation


async def watch_job(ch: grpc.aio.Channel, namespace: str, job_id: str, per_call: float,
                    as_json: bool = False) -> int:
    stub = state_pb2_grpc.StateServiceStub(ch)
    got = await stub.GetJob(state_pb2.GetJobRequest(namespace=namespace, id=job_id),
                            timeout=per_call)
    listed = await list_allocations(ch, f'job_id == "{job_id}"', per_call, namespace)
    deps = await stub.ListDeployments(state_pb2.ListDeploymentsRequest(
        namespace=namespace, filter=f'job_id == "{job_id}"', order_by="create_index desc",
        page_size=1), timeout=per_call)
    view = _JobView(got.job, {a.id: a for a in listed},
                    deps.deployments[0] if deps.deployments else None)
    with _Render(as_json) as out:
        view.show(out)
        if not view.settled():
            stream = stub.Subscribe(state_pb2.SubscribeRequest(
                topics=[state_pb2.TOPIC_JOB, state_pb2.TOPIC_DEPLOYMENT,
                        state_pb2.TOPIC_ALLOCATION], namespace=namespace,
                from_index=got.meta.index))
            try:
                async for resp in stream:
                    for ev in resp.events:
                        view.apply(ev)
                    view.show(out)
                    if view.settled():
                        break
            finally:
                stream.cancel()
    d = view.current_dep()
    return 0 if d is None or d.status == SUCCESSFUL else 1

