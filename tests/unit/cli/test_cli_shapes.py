"""Nomad's CLI shapes: 8-character ids (--verbose for full ones), tables
that fit 80 columns, enum names in JSON as in tables, prefixes for token
accessors, `job list`, the environment named and misspellings warned about,
convergence output that agrees with itself."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import click
import pytest
from click.testing import CliRunner
from fake_drover import fake_drover
from google.protobuf import timestamp_pb2
from rich.console import Console

from drover.api.acl.v1 import acl_pb2
from drover.api.proxy.v1 import proxy_pb2
from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import allocation_pb2, deployment_pb2, job_pb2, node_pb2
from drover.cli import output
from drover.cli.environment import known_variables, unknown_warnings
from drover.cli.jobs import job_row
from drover.cli.main import cli
from drover.cli.output import fit_widths, print_table, table_width, to_dict

UUID = "7f99ea7b-1c2d-4e5f-8a9b-0c1d2e3f4a5b"
LONG = "Deployment completed successfully after every canary was promoted and healthy"


@pytest.fixture
def screen(monkeypatch: pytest.MonkeyPatch) -> Iterator[io.StringIO]:
    """What the tables print, on an 80-column terminal."""
    out = io.StringIO()
    monkeypatch.setattr(output, "console", Console(file=out, width=80))
    yield out


def _render(verbose: bool) -> None:
    ctx = click.Context(click.Command("t"))
    ctx.meta["drover.client"] = {"verbose": verbose}
    with ctx:
        print_table(None, ["ID", "Job ID", "Namespace", "Job Version", "Status", "Description"],
                    [[UUID, "web", "default", 1, "successful", LONG]])


def test_tables_fit_80_columns_with_short_ids_and_cut_text(screen: io.StringIO) -> None:
    _render(verbose=False)
    lines = screen.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 80, lines
    row = lines[-1]
    assert UUID[:8] in row and UUID not in row
    assert "Deployment completed succ…" in row and LONG not in row


def test_verbose_shows_full_ids_and_text(screen: io.StringIO) -> None:
    _render(verbose=True)
    text = screen.getvalue()
    assert UUID in text
    assert "…" not in text and LONG in text  # whole, on lines as long as it takes


def test_fit_never_cuts_an_id_or_address_column() -> None:
    cols = ["ID", "Address", "Description"]
    cells = [["a" * 36, "127.0.0.1:7100", "x" * 200]]
    widths = fit_widths(cols, cells, 80)
    assert widths[:2] == [36, 14]
    assert table_width(widths) <= 80


def test_json_enums_read_as_in_tables() -> None:
    d = to_dict(deployment_pb2.Deployment(status=deployment_pb2.DEPLOYMENT_STATUS_SUCCESSFUL))
    assert d["status"] == "successful"
    a = to_dict(allocation_pb2.Allocation(
        client_status=allocation_pb2.ALLOC_CLIENT_STATUS_LOST,
        desired_status=allocation_pb2.ALLOC_DESIRED_STATUS_STOP))
    assert (a["client_status"], a["desired_status"]) == ("lost", "stop")
    listed = to_dict(state_pb2.ListJobsResponse(jobs=[job_pb2.Job(type=job_pb2.JOB_TYPE_BATCH)]))
    assert listed["jobs"][0]["type"] == "batch"  # nested and repeated too


def test_job_rows_as_nomad_lists_them() -> None:
    job = job_pb2.Job(id="web", namespace="team", type=job_pb2.JOB_TYPE_SERVICE, priority=50,
                      status=job_pb2.JOB_STATUS_DEAD, stop=True,
                      submit_time=timestamp_pb2.Timestamp(seconds=1_700_000_000))
    assert job_row(job) == ["web", "team", "service", 50, "dead (stopped)",
                            "2023-11-14T22:13:20Z"]


def _jobs(req: bytes) -> state_pb2.ListJobsResponse:
    ns = state_pb2.ListJobsRequest.FromString(req).namespace
    return state_pb2.ListJobsResponse(jobs=[
        job_pb2.Job(id="web", namespace="default", type=job_pb2.JOB_TYPE_SERVICE),
        job_pb2.Job(id="report", namespace="team", type=job_pb2.JOB_TYPE_BATCH)]
        if ns == "*" else [])


def test_job_list_and_job_status_without_an_id() -> None:
    with fake_drover({"/drover.state.v1.StateService/ListJobs": _jobs}) as (address, _calls):
        env = {"COLUMNS": "80"}
        empty = CliRunner().invoke(cli, ["--address", address, "job", "status"], env=env)
        assert empty.exit_code == 0 and empty.output.strip() == "No running jobs"
        both = CliRunner().invoke(cli, ["--address", address, "job", "list", "-n", "*"], env=env)
        assert both.exit_code == 0, both.output
        header = both.output.splitlines()[0].split()
        assert [h for h in header if h.isalpha()] == ["ID", "Namespace", "Type", "Priority",
                                                      "Status", "Submit", "Date"]
        assert "report" in both.output and "batch" in both.output


def test_token_accessor_prefixes_are_accepted() -> None:
    full = "3c1f9a2e-0000-4000-8000-000000000001"
    other = "9d2e0b3f-0000-4000-8000-000000000002"
    answers = {
        "/drover.acl.v1.AclService/ListTokens": lambda _r: acl_pb2.ListTokensResponse(
            tokens=[acl_pb2.Token(accessor_id=full), acl_pb2.Token(accessor_id=other)]),
        "/drover.acl.v1.AclService/RevokeToken": lambda _r: acl_pb2.RevokeTokenResponse(),
    }
    with fake_drover(answers) as (address, calls):
        out = CliRunner().invoke(cli, ["--address", address, "acl", "token", "revoke", "3c1f"])
        assert out.exit_code == 0, out.output
        assert f"revoked token {full}" in out.output
        revoked = [acl_pb2.RevokeTokenRequest.FromString(body).accessor_id
                   for method, body in calls if method.endswith("RevokeToken")]
        assert revoked == [full]


def test_convergence_output_agrees_with_itself() -> None:
    """Revision 42 changed no membership: the proxy's effective target is the
    last change before it, applied by the replica at 12 -- converged, and the
    row must not say "behind"."""
    answer = proxy_pb2.WaitForConvergenceResponse(converged=True, replicas=[
        proxy_pb2.ReplicaRevision(replica="proxy-0", address="127.0.0.1:7100",
                                  applied_revision=12)])
    with fake_drover({"/drover.proxy.v1.ClientProxyService/WaitForConvergence":
                      lambda _r: answer}) as (address, _calls):
        out = CliRunner().invoke(cli, ["--address", address, "operator", "convergence",
                                       "--revision", "42", "--wait", "0"])
    assert out.exit_code == 0, out.output
    assert "converged at revision 42" in out.output
    assert "behind" not in out.output and "applied" in out.output


def test_help_names_the_environment() -> None:
    out = CliRunner().invoke(cli, ["--help"])
    for name in ("DROVER_ADDR", "DROVER_TOKEN", "DROVER_TLS_CA"):
        assert name in out.output


def test_a_misspelt_variable_is_warned_about_with_the_closest_known_one() -> None:
    known = known_variables(cli)
    assert {"DROVER_ADDR", "DROVER_TOKEN", "DROVER_STATE_HEARTBEAT_GRACE",
            "DROVER_EVAL_LIST_NAMESPACE", "DROVER_BROKER_NACK_TIMEOUT"} <= known
    warned = unknown_warnings({"DROVER_ADDRESS": "x", "DROVER_ADDR": "y", "HOME": "/"}, known)
    assert warned == ["warning: DROVER_ADDRESS is not a drover variable and is ignored; "
                      "did you mean DROVER_ADDR?"]
    assert unknown_warnings({"DROVER_ZZZZZZZZZZZZZZ": "1"}, known) == [
        "warning: DROVER_ZZZZZZZZZZZZZZ is not a drover variable and is ignored"]


def test_json_round_trips_to_the_cli() -> None:
    # enum names as tables show them are what job specs take back
    assert json.loads(json.dumps(to_dict(job_pb2.Job(type=job_pb2.JOB_TYPE_SYSTEM))))[
        "type"] == "system"


def test_node_list_counts_live_allocations_only() -> None:
    """A finished batch allocation is still desired "run" but neither runs nor
    holds resources: the Allocs column (and the usage) leave it out."""
    def alloc(aid: str, client: int) -> allocation_pb2.Allocation:
        a = allocation_pb2.Allocation(id=aid, node_id="n1",
                                      desired_status=allocation_pb2.ALLOC_DESIRED_STATUS_RUN,
                                      client_status=client)  # type: ignore[arg-type]
        a.resources.cpu = 100
        return a

    answers = {
        "/drover.state.v1.StateService/ListNodes": lambda _r: state_pb2.ListNodesResponse(
            nodes=[node_pb2.Node(id="n1", status=node_pb2.NODE_STATUS_READY)]),
        "/drover.state.v1.StateService/ListAllocations":
            lambda _r: state_pb2.ListAllocationsResponse(allocations=[
                alloc("a1", allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING),
                alloc("a2", allocation_pb2.ALLOC_CLIENT_STATUS_COMPLETE),
                alloc("a3", allocation_pb2.ALLOC_CLIENT_STATUS_FAILED)]),
    }
    with fake_drover(answers) as (address, _calls):
        out = CliRunner().invoke(cli, ["--address", address, "node", "list"],
                                 env={"COLUMNS": "80"})
    assert out.exit_code == 0, out.output
    header, row = out.output.splitlines()[:2]
    assert header.split()[-1] == "Allocs" and row.split()[-1] == "1"
    assert "100/" in row  # only the running one's cpu
