"""Span and metric exporters chosen by the standard ``OTEL_*`` variables.

``OTEL_TRACES_EXPORTER`` / ``OTEL_METRICS_EXPORTER`` name exporters, comma
separated: ``otlp`` (OTLP over gRPC; the exporter itself reads
``OTEL_EXPORTER_OTLP_ENDPOINT``, ``_INSECURE``, ``_HEADERS``, ``_CERTIFICATE``,
``_TIMEOUT``, ``_COMPRESSION`` and their ``_TRACES_``/``_METRICS_`` forms),
``console`` (stderr, for debugging) or ``none``. Unset, traces go to OTLP when
an OTLP endpoint is set and nowhere otherwise: a server must not spend its
time retrying an absent collector on localhost:4317 because nobody configured
one. ``OTEL_SDK_DISABLED=true`` turns everything off. The batch processor
reads ``OTEL_BSP_*``, the sampler ``OTEL_TRACES_SAMPLER(_ARG)``, the resource
``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES``: all SDK behaviour.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
)

KNOWN = ("otlp", "console", "none")


class TelemetryConfigError(ValueError):
    """An ``OTEL_*`` variable names something drover cannot do."""


def sdk_disabled(env: Mapping[str, str] = os.environ) -> bool:
    return env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"


def _names(signal: str, default: str, env: Mapping[str, str]) -> list[str]:
    var = f"OTEL_{signal}_EXPORTER"
    raw = env.get(var, "").strip() or default
    names = [n.strip().lower() for n in raw.split(",") if n.strip()]
    bad = [n for n in names if n not in KNOWN]
    if bad:
        raise TelemetryConfigError(
            f"{var}={raw[:80]!r}: unknown exporter {bad[0][:40]!r}; use otlp, console or none"
        )
    protocol = (env.get(f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL")
                or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "grpc")
    if "otlp" in names and protocol.strip().lower() != "grpc":
        raise TelemetryConfigError(
            f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol[:40]!r}: drover exports OTLP over gRPC only; "
            "unset it or set it to grpc"
        )
    return [n for n in names if n != "none"]


def _otlp_endpoint_set(signal: str, env: Mapping[str, str]) -> bool:
    return bool(env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or
                env.get(f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT"))


def trace_exporter_names(env: Mapping[str, str] = os.environ) -> list[str]:
    """Which span exporters the environment asks for (validated)."""
    default = "otlp" if _otlp_endpoint_set("TRACES", env) else "none"
    return _names("TRACES", default, env)


def metric_exporter_names(env: Mapping[str, str] = os.environ) -> list[str]:
    """Which push metric exporters the environment asks for (Prometheus is separate)."""
    default = "otlp" if _otlp_endpoint_set("METRICS", env) else "none"
    return _names("METRICS", default, env)


def span_processors(names: list[str]) -> list[SpanProcessor]:
    out: list[SpanProcessor] = []
    for name in names:
        if name == "otlp":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

            out.append(BatchSpanProcessor(OTLPSpanExporter()))
        elif name == "console":
            out.append(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
    return out


def metric_readers(names: list[str]) -> list[Any]:
    from opentelemetry.sdk.metrics.export import (
        ConsoleMetricExporter,
        PeriodicExportingMetricReader,
    )

    out: list[Any] = []
    for name in names:
        if name == "otlp":
            from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
                OTLPMetricExporter,
            )

            out.append(PeriodicExportingMetricReader(OTLPMetricExporter()))
        elif name == "console":
            out.append(PeriodicExportingMetricReader(ConsoleMetricExporter(out=sys.stderr)))
    return out
