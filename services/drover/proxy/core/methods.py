"""Which methods the proxy forwards, to which backend, with which metadata.

Taken from the generated descriptors, so a method added to a backend's
proto is forwarded without proxy changes. Pure: no gRPC calls.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from drover.api.acl.v1 import acl_pb2
from drover.api.broker.v1 import broker_pb2
from drover.api.deployments.v1 import deployments_pb2
from drover.api.state.v1 import state_pb2

#: Backend membership name -> the generated modules describing its services
#: (the state replicas also host the ACL service).
BACKEND_MODULES: Mapping[str, tuple[ModuleType, ...]] = {
    "state": (state_pb2, acl_pb2),
    "broker": (broker_pb2,),
    "deployments": (deployments_pb2,),
}

#: Request headers that belong to the caller's hop, not to the call.
HOP_HEADERS = frozenset({"user-agent", "content-type", "te", "host", "grpc-timeout"})

@dataclass(frozen=True)
class ForwardedMethod:
    path: str  # /drover.state.v1.StateService/GetJob
    backend: str  # membership name: state, broker, deployments
    client_streaming: bool
    server_streaming: bool


def forwarded_methods(
    modules: Mapping[str, tuple[ModuleType, ...]] = BACKEND_MODULES,
) -> dict[str, ForwardedMethod]:
    out: dict[str, ForwardedMethod] = {}
    for backend, group in modules.items():
        for svc in (s for m in group for s in m.DESCRIPTOR.services_by_name.values()):
            for m in svc.methods:
                path = f"/{svc.full_name}/{m.name}"
                out[path] = ForwardedMethod(path, backend, m.client_streaming, m.server_streaming)
    return out


def forwarded_service_names(
    modules: Mapping[str, tuple[ModuleType, ...]] = BACKEND_MODULES,
) -> list[str]:
    return [svc.full_name for group in modules.values() for m in group
            for svc in m.DESCRIPTOR.services_by_name.values()]


def forwardable(metadata: Iterable[tuple[str, Any]] | None) -> tuple[tuple[str, Any], ...]:
    """The caller's metadata without pseudo and transport headers."""
    return tuple(
        (k, v)
        for k, v in metadata or ()
        if not k.startswith(":") and not k.startswith("grpc-") and k not in HOP_HEADERS
    )
