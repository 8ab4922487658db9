"""Logs, traces and metrics for every drover process.

One call, :func:`setup`, configures structured logging, an OpenTelemetry
tracer provider and a meter provider whose readings are served by a
Prometheus endpoint on the metrics port. Idempotent: tests build many servers
in one process.
"""

from drover.telemetry._setup import meter, setup, tracer

__all__ = ["meter", "setup", "tracer"]
