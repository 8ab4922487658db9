"""The CLI's one-line errors say what happened: a drover that answered
UNAVAILABLE (no leader yet, a server behind the proxy broken, outcome
unknown, ACL data stale) is reported as that, with its reason; only a
drover that is not there is "cannot reach"; reads wait out an election."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field

import grpc
import pytest
from click.testing import CliRunner
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from drover.api.broker.v1 import broker_pb2
from drover.cli.main import cli
from drover.dev.ports import free_port

STATS = "/drover.broker.v1.EvalBrokerService/GetBrokerStats"
#: The channels' own retry policy's attempts (drover.rpc.channels): one CLI
#: attempt of a read may be this many calls.
CHANNEL_ATTEMPTS = 4
CANCEL = "/drover.broker.v1.EvalBrokerService/CancelEvaluation"


@dataclass
class Script:
    """What the fake server answers: ``failures`` times ``error``, then OK."""

    error: tuple[str, str] = ("", "")  # (reason or "relayed", details)
    failures: int = 0
    calls: list[str] = field(default_factory=list)
    #: The ErrorInfo's metadata (NO_SERVER names its service).
    metadata: dict[str, str] = field(default_factory=dict)


class Handler(grpc.GenericRpcHandler):
    def __init__(self, script: Script) -> None:
        self.script = script

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        method = details.method  # type: ignore[attr-defined]
        if method not in (STATS, CANCEL):
            return None

        def answer(request: bytes, context: grpc.ServicerContext) -> bytes:
            s = self.script
            s.calls.append(method)
            if len(s.calls) <= s.failures:
                reason, text = s.error
                if reason == "relayed":  # a transport error passed on as it came
                    context.abort(grpc.StatusCode.UNAVAILABLE, text)
                info = any_pb2.Any()
                info.Pack(error_details_pb2.ErrorInfo(reason=reason, domain="drover",
                                                      metadata=s.metadata))
                context.abort_with_status(rpc_status.to_status(status_pb2.Status(
                    code=grpc.StatusCode.UNAVAILABLE.value[0], message=text, details=[info])))
            if method == STATS:
                return broker_pb2.GetBrokerStatsResponse(
                    stats=broker_pb2.BrokerStats(total_ready=3)).SerializeToString()
            return broker_pb2.CancelEvaluationResponse(index=9).SerializeToString()

        return grpc.unary_unary_rpc_method_handler(answer)


@pytest.fixture
def server() -> Iterator[tuple[str, Script]]:
    script = Script()
    srv = grpc.server(futures.ThreadPoolExecutor(4), handlers=[Handler(script)])
    port = srv.add_insecure_port("127.0.0.1:0")
    srv.start()
    yield f"127.0.0.1:{port}", script
    srv.stop(0)


@dataclass(frozen=True)
class Said:
    exit_code: int
    output: str  # whitespace collapsed: the error line wraps at the terminal's width


def drover(address: str, *args: str) -> Said:
    out = CliRunner().invoke(cli, ["--address", address, *args], env={"DROVER_TOKEN": None})
    return Said(out.exit_code, " ".join(out.output.split()))


def test_a_read_waits_out_an_election(server: tuple[str, Script]) -> None:
    address, script = server
    # more failures than the channel's own retry policy covers (4 attempts)
    script.error, script.failures = ("NOT_LEADER", "this broker replica is not the leader"), 9
    out = drover(address, "broker", "stats", "--json", "--timeout", "10")
    assert out.exit_code == 0, out.output
    assert '"total_ready": "3"' in out.output and len(script.calls) == 10


def test_no_leader_past_the_timeout_says_so(server: tuple[str, Script]) -> None:
    address, script = server
    script.error = ("NOT_LEADER", "this broker replica is not the leader; no leader is known yet")
    script.failures = 10_000
    out = drover(address, "broker", "stats", "--timeout", "1")
    assert out.exit_code == 1
    assert "(NOT_LEADER); a leader election is under way" in out.output, out.output
    assert "cannot reach" not in out.output


def test_a_relayed_transport_error_is_not_cannot_reach(server: tuple[str, Script]) -> None:
    address, script = server
    script.error = ("relayed", "failed to connect to all addresses; 127.0.0.1:7102 refused")
    script.failures = 10_000
    out = drover(address, "broker", "stats", "--timeout", "1")
    assert out.exit_code == 1
    assert f"drover at {address} answered, but a server behind it is unavailable" in out.output
    assert "cannot reach" not in out.output and len(script.calls) > CHANNEL_ATTEMPTS


def test_an_unknown_outcome_is_reported_once_and_not_repeated(
        server: tuple[str, Script]) -> None:
    address, script = server
    script.error = ("OUTCOME_UNKNOWN", "CancelEvaluation may or may not have been applied")
    script.failures = 1
    out = drover(address, "broker", "cancel", "e1", "--timeout", "5")
    assert out.exit_code == 1 and script.calls == [CANCEL]
    assert "(OUTCOME_UNKNOWN); the write may have been applied: check" in out.output


def test_a_stale_acl_view_says_so_at_once(server: tuple[str, Script]) -> None:
    address, script = server
    script.error = ("ACL_DATA_STALE", "ACL data is 45s stale; fix this server's etcd connection")
    script.failures = 10_000
    out = drover(address, "broker", "stats", "--timeout", "10")
    assert out.exit_code == 1 and len(script.calls) <= CHANNEL_ATTEMPTS  # not waited on
    assert "45s stale" in out.output and "(ACL_DATA_STALE)" in out.output


def test_nothing_listening_is_cannot_reach() -> None:
    address = f"127.0.0.1:{free_port()}"
    out = drover(address, "broker", "stats", "--timeout", "5")
    assert out.exit_code == 1 and f"cannot reach drover at {address}" in out.output


@pytest.mark.parametrize(("service", "election"), [("state", False), ("broker", True)])
def test_no_server_speaks_of_an_election_only_for_an_elected_service(
        server: tuple[str, Script], service: str, election: bool) -> None:
    """The state service has no leader: with it down, no "leader election"."""
    address, script = server
    script.error = ("NO_SERVER", f"no server known for {service}")
    script.metadata = {"service": service}
    script.failures = 10_000
    out = drover(address, "broker", "stats", "--timeout", "1")
    assert out.exit_code == 1 and f"no {service} server is up" in out.output, out.output
    assert ("leader election" in out.output) == election, out.output
