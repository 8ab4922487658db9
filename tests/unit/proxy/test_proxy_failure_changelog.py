"""Failure classification, the change log behind the barrier, backup parsing."""

from __future__ import annotations

import pytest

from drover.proxy.config import parse_backup_servers
from drover.proxy.core.change_log import ChangeLog
from drover.proxy.core.failure import classify
from drover.proxy.core.retry import FailureKind
from drover.proxy.errors import InvalidBackupServer, InvalidRevision
from drover.proxy.forward import forwardable, forwarded_methods
from drover.rpc.remote import RemoteStatus

REFUSED = (
    "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:1: "
    "Failed to connect to remote host: Connection refused"
)


def _status(code: str, details: str, trailing: tuple) -> RemoteStatus:
    leader = next((str(v) for k, v in trailing if k == "drover-leader"), None)
    return RemoteStatus(code, details, leader=leader, answered=bool(trailing))


@pytest.mark.parametrize(
    ("code", "details", "trailing", "kind"),
    [
        ("UNAVAILABLE", REFUSED, (), FailureKind.NOT_SENT),
        ("UNAVAILABLE", "Cancelling all calls", (), FailureKind.CONNECTION_LOST),
        ("UNAVAILABLE", "Socket closed", (), FailureKind.CONNECTION_LOST),
        ("UNAVAILABLE", "not the leader", (("drover-leader", "b:1"),),
         FailureKind.REFUSED_UNAVAILABLE),
        # A server's answer wins over words in its message.
        ("UNAVAILABLE", "connection refused by peer", (("grpc-status-details-bin", b"x"),),
         FailureKind.REFUSED_UNAVAILABLE),
        ("FAILED_PRECONDITION", "fence lost", (), FailureKind.REFUSED_PRECONDITION),
        ("DEADLINE_EXCEEDED", "Deadline Exceeded", (), FailureKind.DEADLINE_EXCEEDED),
        ("CANCELLED", "", (), FailureKind.CANCELLED),
        ("NOT_FOUND", "no job", (), FailureKind.ANSWERED),
    ],
)
def test_classify(code: str, details: str, trailing: tuple, kind: FailureKind) -> None:
    failure = classify(_status(code, details, trailing), server="s:1")
    assert failure.kind is kind
    assert failure.server == "s:1"


def test_classify_reads_the_leader_hint_and_relayed_flag() -> None:
    failure = classify(_status("FAILED_PRECONDITION", "", (("drover-leader", "b:2"),)),
                       server="b:1", relayed=True)
    assert failure.leader_hint == "b:2" and failure.relayed


def test_change_log_maps_a_target_to_the_last_change_at_or_below_it() -> None:
    log = ChangeLog()
    log.record(10, changed=True)  # the initial view
    log.record(12, changed=False)  # a proxy published its revision
    log.record(15, changed=True)
    log.record(17, changed=False)
    assert log.observed == 17 and log.last_change == 15
    assert log.effective_target(12) == 10
    assert log.effective_target(15) == 15
    assert log.effective_target(17) == 15
    assert log.effective_target(18) is None  # not observed yet
    assert log.effective_target(5) == 5  # before our first view: stricter
    log.mark_quiet_through(20)
    assert log.effective_target(20) == 15


def test_change_log_forgets_old_changes_conservatively() -> None:
    log = ChangeLog(capacity=2)
    for rev in (3, 5, 7):
        log.record(rev, changed=True)
    assert log.effective_target(4) == 4  # 3 was forgotten: require the target itself
    assert log.effective_target(6) == 5
    log.record(6, changed=True)  # a late, reordered change is inserted in order
    assert log.effective_target(6) == 6


def test_change_log_bad_input() -> None:
    with pytest.raises(InvalidRevision):
        ChangeLog(capacity=0)
    with pytest.raises(InvalidRevision):
        ChangeLog().record(-1, changed=True)
    with pytest.raises(InvalidRevision):
        ChangeLog().effective_target(-1)


def test_parse_backup_servers() -> None:
    parsed = parse_backup_servers(["state=10.0.0.1:4650", " broker = h:1 ", "state=h:2"])
    assert parsed == {"state": ("10.0.0.1:4650", "h:2"), "broker": ("h:1",)}
    assert parse_backup_servers([]) == {}


@pytest.mark.parametrize("entry", ["10.0.0.1:4650", "state=", "state=host", "=h:1",
                                   "state=h:port", "nope=h:1"])
def test_parse_backup_servers_rejects(entry: str) -> None:
    with pytest.raises(InvalidBackupServer) as caught:
        parse_backup_servers([entry])
    assert caught.value.reason == "INVALID_BACKUP_SERVER"


def test_forwardable_drops_transport_headers() -> None:
    md = [(":authority", "x"), ("user-agent", "grpc"), ("grpc-timeout", "1S"),
          ("drover-fence", "k:3"), ("x-bin", b"\x00"), ("content-type", "application/grpc")]
    assert forwardable(md) == (("drover-fence", "k:3"), ("x-bin", b"\x00"))
    assert forwardable(None) == ()


def test_every_backend_method_is_forwarded_with_its_shape() -> None:
    methods = forwarded_methods()
    sub = methods["/drover.state.v1.StateService/Subscribe"]
    assert sub.backend == "state" and sub.server_streaming and not sub.client_streaming
    assert methods["/drover.broker.v1.EvalBrokerService/Dequeue"].backend == "broker"
    assert methods["/drover.deployments.v1.DeploymentWatcherService/PromoteDeployment"].backend \
        == "deployments"
    assert not any(p.startswith("/drover.proxy.") for p in methods)
