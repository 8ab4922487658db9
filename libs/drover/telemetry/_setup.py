from __future__ import annotations

import json
import logging
import os
import sys
import threading
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from drover.telemetry._export import (
    metric_exporter_names,
    metric_readers,
    sdk_disabled,
    span_processors,
    trace_exporter_names,
)
from drover.telemetry._lean import LeanTracerProvider

_lock = threading.Lock()
_configured = False
_metrics_port: int | None = None


class TraceIds(logging.Filter):
    """Puts the current span's trace and span ids on every log record
    (``trace_id``/``span_id``, hex, as OTLP and W3C write them), so a log
    line can be found from a trace and the other way round."""

    def filter(self, record: logging.LogRecord) -> bool:
        ctx = trace.get_current_span().get_span_context()
        if ctx.is_valid:
            record.trace_id = format(ctx.trace_id, "032x")
            record.span_id = format(ctx.span_id, "016x")
        return True


def _ids(record: logging.LogRecord) -> dict[str, str]:
    tid = getattr(record, "trace_id", None)
    return {"trace_id": tid, "span_id": record.span_id} if tid else {}  # type: ignore[attr-defined]


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        extra = getattr(record, "fields", None)
        if isinstance(extra, dict):
            out.update(extra)
        out.update(_ids(record))
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


class _TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        base = super().format(record)
        extra = getattr(record, "fields", None)
        fields = {**extra} if isinstance(extra, dict) else {}
        fields.update(_ids(record))
        if fields:
            base += " " + " ".join(f"{k}={v}" for k, v in fields.items())
        return base


def _resource(service: str) -> Resource:
    # OTEL_SERVICE_NAME, when set, names the service (Resource.create reads it
    # and OTEL_RESOURCE_ATTRIBUTES); otherwise drover-<service>.
    attrs = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": f"drover-{service}"}
    return Resource.create(attrs)


def setup_tracing(service: str) -> bool:
    """Only the tracer provider, from ``OTEL_*`` (what the CLI needs).

    Returns whether spans go anywhere. Idempotent per process.
    """
    global _configured
    with _lock:
        if _configured or isinstance(trace.get_tracer_provider(), TracerProvider):
            return bool(trace_exporter_names())
        names = [] if sdk_disabled() else trace_exporter_names()
        if names:
            provider = LeanTracerProvider(resource=_resource(service))
            for processor in span_processors(names):
                provider.add_span_processor(processor)
            trace.set_tracer_provider(provider)
        return bool(names)


def setup(
    *,
    service: str,
    log_level: str = "INFO",
    log_json: bool = False,
    metrics_listen: str = "",
) -> int | None:
    """Configure logging, tracing and metrics once per process.

    Spans are exported as the ``OTEL_*`` variables say (see ``_export``);
    metrics are served for Prometheus on ``metrics_listen`` (``host:port``)
    and pushed where ``OTEL_METRICS_EXPORTER`` says. Returns the Prometheus
    port when ``metrics_listen`` is set. Raises TelemetryConfigError (one
    line) for an ``OTEL_*`` value drover cannot honour.
    """
    global _configured, _metrics_port
    trace_names = [] if sdk_disabled() else trace_exporter_names()
    metric_names = [] if sdk_disabled() else metric_exporter_names()
    with _lock:
        root = logging.getLogger()
        root.setLevel(log_level.upper())
        if not any(getattr(h, "_drover", False) for h in root.handlers):
            handler = logging.StreamHandler(sys.stderr)
            handler._drover = True  # type: ignore[attr-defined]
            handler.addFilter(TraceIds())
            handler.setFormatter(
                _JsonFormatter()
                if log_json
                else _TextFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
            )
            root.addHandler(handler)
        if _configured:
            return _metrics_port
        resource = _resource(service)
        # A provider even with no exporter: spans still carry ids that the
        # interceptors propagate and the logs show (ids only, no recording,
        # until a span processor is added: see _lean).
        provider = LeanTracerProvider(resource=resource)
        for processor in span_processors(trace_names):
            provider.add_span_processor(processor)
        trace.set_tracer_provider(provider)
        readers = metric_readers(metric_names)
        if metrics_listen:
            from opentelemetry.exporter.prometheus import PrometheusMetricReader
            from prometheus_client import start_http_server

            host, _, port = metrics_listen.rpartition(":")
            server, _thread = start_http_server(int(port), addr=host or "127.0.0.1")
            _metrics_port = int(server.server_port)
            readers.append(PrometheusMetricReader())
        metrics.set_meter_provider(MeterProvider(resource=resource, metric_readers=readers))
        _configured = True
        return _metrics_port


def tracer(name: str) -> trace.Tracer:
    return trace.get_tracer(name)


def meter(name: str) -> metrics.Meter:
    return metrics.get_meter(name)
