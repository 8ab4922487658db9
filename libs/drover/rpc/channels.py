"""Client channels to drover servers.

Every channel gets keepalive pings (so a dead peer is noticed within about
40 s even on an idle connection) and a retry service config that retries
UNAVAILABLE only for unary reads (:func:`drover.rpc.reads.is_read`): Get*,
List* and Count* methods of drover services and the health check. Writes
are never retried by the channel; callers that know a write is safe to
repeat do so themselves (tenacity). Every channel carries the caller's W3C
trace context (a CLIENT span per call, :mod:`drover.rpc.propagation`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import grpc

from drover.api.broker.v1 import broker_pb2
from drover.api.deployments.v1 import deployments_pb2
from drover.api.proxy.v1 import proxy_pb2
from drover.api.state.v1 import state_pb2
from drover.config import TlsFiles
from drover.rpc.propagation import TokenSource, TracedChannel
from drover.rpc.reads import is_read

#: Every drover server and channel states its message limit explicitly, the
#: same both ways: generous (a page of objects can be large) but bounded.
MAX_MESSAGE_BYTES = 16 * 1024 * 1024

_DESCRIPTORS = (state_pb2, broker_pb2, deployments_pb2, proxy_pb2)


def read_methods() -> list[tuple[str, str]]:
    """(full service name, method) of every unary read RPC in the drover API."""
    out = []
    for module in _DESCRIPTORS:
        for svc in module.DESCRIPTOR.services_by_name.values():
            for m in svc.methods:
                if is_read(f"/{svc.full_name}/{m.name}") and not m.server_streaming:
                    out.append((svc.full_name, m.name))
    return out


def service_config() -> str:
    names = [{"service": s, "method": m} for s, m in read_methods()]
    names.append({"service": "grpc.health.v1.Health", "method": "Check"})
    return json.dumps(
        {
            "methodConfig": [
                {
                    "name": names,
                    "retryPolicy": {
                        "maxAttempts": 4,
                        "initialBackoff": "0.05s",
                        "maxBackoff": "1s",
                        "backoffMultiplier": 2,
                        "retryableStatusCodes": ["UNAVAILABLE"],
                    },
                }
            ]
        }
    )


def channel_options(*, retries: bool = True) -> list[tuple[str, Any]]:
    opts: list[tuple[str, Any]] = [
        ("grpc.keepalive_time_ms", 30_000),
        ("grpc.keepalive_timeout_ms", 10_000),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ("grpc.enable_retries", 1 if retries else 0),
    ]
    if retries:
        opts.append(("grpc.service_config", service_config()))
    return opts


def channel(
    address: str, *, tls: TlsFiles | None = None, retries: bool = True,
    token: TokenSource | None = None,
) -> grpc.aio.Channel:
    """An asyncio channel to ``host:port`` (TLS when ``tls`` has a CA or cert).

    ``token``, if given, is asked on every call for the secret to send as
    ``authorization: Bearer <secret>`` (empty: none); it replaces any the
    caller set. Servers pass their server identity here, the CLI the user's.
    """
    if tls is not None and tls.enabled:
        creds = grpc.ssl_channel_credentials(
            root_certificates=Path(tls.ca).read_bytes() if tls.ca else None,
            private_key=Path(tls.key).read_bytes() if tls.key else None,
            certificate_chain=Path(tls.cert).read_bytes() if tls.cert else None,
        )
        inner = grpc.aio.secure_channel(address, creds, options=channel_options(retries=retries))
    else:
        inner = grpc.aio.insecure_channel(address, options=channel_options(retries=retries))
    return TracedChannel(inner, token=token or None)

