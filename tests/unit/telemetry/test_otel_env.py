"""Which exporters the standard OTEL_* variables select."""

from __future__ import annotations

import pytest

from drover.telemetry import TelemetryConfigError
from drover.telemetry._export import (
    metric_exporter_names,
    sdk_disabled,
    span_processors,
    trace_exporter_names,
)


def test_nothing_is_exported_unless_asked() -> None:
    assert trace_exporter_names({}) == []
    assert metric_exporter_names({}) == []


def test_an_otlp_endpoint_alone_turns_otlp_on() -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317"}
    assert trace_exporter_names(env) == ["otlp"]
    assert metric_exporter_names(env) == ["otlp"]
    assert trace_exporter_names({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4317"}) == ["otlp"]
    assert metric_exporter_names({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4317"}) == []


def test_exporter_lists_and_none() -> None:
    assert trace_exporter_names({"OTEL_TRACES_EXPORTER": "console, otlp"}) == ["console", "otlp"]
    env = {"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"}
    assert trace_exporter_names(env) == []


def test_unknown_exporter_is_one_clear_line() -> None:
    with pytest.raises(TelemetryConfigError, match="unknown exporter 'jaeger'") as err:
        trace_exporter_names({"OTEL_TRACES_EXPORTER": "jaeger"})
    assert "\n" not in str(err.value)
    long = "x" * 10_000
    with pytest.raises(TelemetryConfigError) as err:
        trace_exporter_names({"OTEL_TRACES_EXPORTER": long})
    assert len(str(err.value)) < 300


def test_only_grpc_otlp_is_accepted() -> None:
    env = {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}
    with pytest.raises(TelemetryConfigError, match="over gRPC only"):
        trace_exporter_names(env)
    env = {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc",
           "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}
    assert trace_exporter_names(env) == ["otlp"]


def test_sdk_disabled() -> None:
    assert sdk_disabled({"OTEL_SDK_DISABLED": "true"})
    assert not sdk_disabled({"OTEL_SDK_DISABLED": "false"})
    assert not sdk_disabled({})


def test_processors_are_built_for_each_name() -> None:
    procs = span_processors(["console", "otlp"])
    assert [type(p).__name__ for p in procs] == ["SimpleSpanProcessor", "BatchSpanProcessor"]
    for p in procs:
        p.shutdown()
