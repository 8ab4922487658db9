"""Logs, traces and metrics for every drover process.

One call, :func:`setup`, configures structured logging (every record carries
the current trace and span ids), an OpenTelemetry tracer provider whose
exporters the standard ``OTEL_*`` variables choose (OTLP over gRPC, console),
and a meter provider whose readings are served by a Prometheus endpoint on
the metrics port. :func:`setup_tracing` is the tracer part alone, for the
CLI. Idempotent: tests build many servers in one process.
"""

from drover.telemetry._export import TelemetryConfigError
from drover.telemetry._setup import TraceIds, meter, setup, setup_tracing, tracer

__all__ = ["TelemetryConfigError", "TraceIds", "meter", "setup", "setup_tracing", "tracer"]
