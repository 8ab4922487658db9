from __future__ import annotations

import json
import logging
import sys
import threading
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

_lock = threading.Lock()
_configured = False
_metrics_port: int | None = None


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
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


class _TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        base = super().format(record)
        extra = getattr(record, "fields", None)
        if isinstance(extra, dict) and extra:
            base += " " + " ".join(f"{k}={v}" for k, v in extra.items())
        return base


def setup(
    *,
    service: str,
    log_level: str = "INFO",
    log_json: bool = False,
    metrics_listen: str = "",
) -> int | None:
    """Configure logging, tracing and metrics once per process.

    Returns the Prometheus port when ``metrics_listen`` (``host:port``) is set.
    """
    global _configured, _metrics_port
    with _lock:
        root = logging.getLogger()
        root.setLevel(log_level.upper())
        if not any(getattr(h, "_drover", False) for h in root.handlers):
            handler = logging.StreamHandler(sys.stderr)
            handler._drover = True  # type: ignore[attr-defined]
            handler.setFormatter(
                _JsonFormatter()
                if log_json
                else _TextFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
            )
            root.addHandler(handler)
        if _configured:
            return _metrics_port
        resource = Resource.create({"service.name": f"drover-{service}"})
        trace.set_tracer_provider(TracerProvider(resource=resource))
        readers = []
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
