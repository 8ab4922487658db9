"""The conformance suite's one shared cluster (`make conformance WORKER=...`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conformance_harness import Cluster, dev_cluster


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with dev_cluster(tmp_path_factory.mktemp("conformance")) as c:
        yield c
