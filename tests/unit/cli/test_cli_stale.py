"""--stale/--max-stale: what the reading commands send as QueryOptions."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import query_pb2
from drover.cli.stale import parse_duration, query_options, stale_options, with_query


def _sent(*args: str) -> query_pb2.QueryOptions | None:
    seen: list[query_pb2.QueryOptions | None] = []

    @click.command()
    @stale_options
    def cmd() -> None:
        seen.append(query_options())

    result = CliRunner().invoke(cmd, list(args))
    assert result.exit_code == 0, result.output
    return seen[0]


def test_no_flag_sends_no_query_options() -> None:
    assert _sent() is None


def test_stale_and_max_stale_become_query_options() -> None:
    assert _sent("--stale") == query_pb2.QueryOptions(stale=True)
    bounded = _sent("--max-stale", "2500ms")
    assert bounded is not None and bounded.stale  # max_stale implies stale
    assert bounded.max_stale.ToTimedelta().total_seconds() == 2.5


@pytest.mark.parametrize(("text", "seconds"), [("2s", 2.0), ("500ms", 0.5), ("1m", 60.0),
                                               ("1.5", 1.5), ("1h", 3600.0)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


def test_a_bad_duration_is_a_usage_error() -> None:
    @click.command()
    @stale_options
    def cmd() -> None:
        pass

    result = CliRunner().invoke(cmd, ["--max-stale", "soon"])
    assert result.exit_code == 2 and "not a duration" in result.output


def test_with_query_fills_requests_that_have_the_field_only() -> None:
    query = query_pb2.QueryOptions(stale=True)
    req = with_query(state_pb2.ListJobsRequest(), query)
    assert req.query.stale
    other = state_pb2.RegisterJobRequest()
    assert with_query(other, query) == state_pb2.RegisterJobRequest()
