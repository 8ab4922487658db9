"""Shared test harness: a real etcd for the whole session, and (only for
the tests that ask for ``etcd_cluster3``) a real three-member cluster.

``--etcd-endpoint host:port`` uses an external etcd instead of starting one.
Every test gets its own key prefix (``etcd_prefix``), so tests share one etcd
without seeing each other's keys. The session's event loop ends bounded,
whatever a test left running (:mod:`loop_guard`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from hypothesis import settings
from loop_guard import no_task_outlives_the_session  # noqa: F401 (autouse, see loop_guard)
from virtual_clock import VirtualClock

from drover.coord.keys import Keyspace
from drover.dev.etcd import EtcdCluster, EtcdServer

# Property tests check behaviour, not speed (speed is measured by bench/):
# no per-example deadline, which a loaded machine turns into a flaky failure.
settings.register_profile("drover", deadline=None)
settings.load_profile("drover")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--etcd-endpoint",
        default=None,
        help="use this etcd (host:port) instead of starting one on loopback",
    )


@pytest.fixture(scope="session")
def etcd_server(request: pytest.FixtureRequest) -> Iterator[EtcdServer | None]:
    """The session's etcd process (None with --etcd-endpoint)."""
    if request.config.getoption("--etcd-endpoint"):
        yield None
        return
    server = EtcdServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def etcd_endpoint(request: pytest.FixtureRequest, etcd_server: EtcdServer | None) -> str:
    external = request.config.getoption("--etcd-endpoint")
    if external:
        return str(external)
    assert etcd_server is not None
    return etcd_server.endpoint


@pytest.fixture(scope="session")
def etcd_cluster3_session() -> Iterator[EtcdCluster]:
    """Three real etcd members on loopback, started the first time a test
    asks for them (session-scoped fixtures are lazy) and shared after."""
    cluster = EtcdCluster(size=3, name="drover-t").start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def etcd_cluster3(etcd_cluster3_session: EtcdCluster) -> Iterator[EtcdCluster]:
    """The three-member cluster, every member running and unfrozen when the
    test starts and again after it (a fault a test leaves is healed)."""
    etcd_cluster3_session.heal()
    try:
        yield etcd_cluster3_session
    finally:
        etcd_cluster3_session.heal()


@pytest.fixture
def etcd_prefix() -> str:
    """A key root no other test uses (``/t<hex>/drover``)."""
    return f"/t{uuid.uuid4().hex[:12]}/drover"


@pytest.fixture
def keyspace(etcd_prefix: str) -> Keyspace:
    return Keyspace(etcd_prefix)


@pytest.fixture
def clock() -> VirtualClock:
    """The one virtual clock (see ``tests/virtual_clock.py``), at 0."""
    return VirtualClock()
