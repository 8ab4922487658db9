"""`drover serve` startup mistakes are one line naming the cause, no traceback."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from drover.cli import serve as serve_module
from drover.telemetry import TelemetryConfigError


@pytest.fixture(autouse=True)
def _no_telemetry(monkeypatch: pytest.MonkeyPatch) -> None:
    # The process-wide providers are the integration tests' to configure.
    monkeypatch.setattr(serve_module, "setup", lambda **_: None)


def test_backup_servers_help_says_the_format() -> None:
    out = CliRunner().invoke(serve_module.serve, ["proxy", "--help"], terminal_width=200).output
    assert "service=host:port" in out


@pytest.mark.parametrize(("value", "says"), [
    ("127.0.0.1:4650", "must be service=host:port"),
    ("nosuch=127.0.0.1:4650", "names unknown service 'nosuch'"),
])
def test_a_bad_backup_server_is_one_line(value: str, says: str) -> None:
    result = CliRunner().invoke(serve_module.serve, ["proxy", "--backup-servers", value])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "INVALID_BACKUP_SERVER" in lines[0], lines


def test_an_otel_exporter_drover_lacks_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(**_: object) -> None:
        raise TelemetryConfigError("OTEL_TRACES_EXPORTER='zipkin': unknown exporter 'zipkin'")

    monkeypatch.setattr(serve_module, "setup", refuse)
    result = CliRunner().invoke(serve_module.serve, ["state"])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "Error: OTEL_TRACES_EXPORTER='zipkin': unknown exporter 'zipkin'"]
