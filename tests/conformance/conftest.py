"""The conformance suite's one shared cluster (`make conformance WORKER=...`).

A failed scenario's report carries what the cluster held for every job the
scenario ran (its evaluations and allocations, read over gRPC): what to
look at when a worker fails a scenario.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import Any

import grpc
import pytest
from conformance_harness import Cluster, dev_cluster


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with dev_cluster(tmp_path_factory.mktemp("conformance")) as c:
        yield c


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any],
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    c = getattr(item, "funcargs", {}).get("cluster")
    if report.when == "call" and report.failed and isinstance(c, Cluster):
        try:
            held = "\n\n".join(f"job {j}:\n{c.describe(j)}" for j in c.jobs_run)
        except grpc.RpcError as e:
            held = f"(the cluster did not answer: {e})"
        report.sections.append(("what the cluster holds", held))
        report.sections.append(("drover dev", c.dev_log_tail()))
    return report
