"""Responses a handler serialized itself, passed through to the wire as is.

A stream that sends the same message to many callers (the state service's
``Subscribe``: every subscriber gets each change) can serialize it once and
yield the ``bytes`` to every stream; the method's response serializer then
passes ``bytes`` through and serializes anything else as before. The wire
format, the public proto and every client are unchanged: only who
serializes, and how often, is.

:func:`with_encoded` wraps a generated ``add_*Servicer_to_server`` so the
named methods accept pre-serialized responses; the handlers go through the
server's interceptors like any other (they only see the response objects,
which the handler may now yield as ``bytes``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

import grpc

__all__ = ["passthrough", "with_encoded"]

Serializer = Callable[[Any], bytes]
AddServicer = Callable[[Any, Any], None]


def passthrough(serialize: Serializer | None) -> Serializer:
    """A response serializer that leaves ``bytes`` alone and serializes the rest."""

    def serializer(message: Any) -> bytes:
        if type(message) is bytes:
            return message
        if serialize is None:
            raise TypeError(f"no serializer for a {type(message).__name__} response")
        return serialize(message)

    return serializer


class _Captured:
    """Stands in for a server while a generated add function registers into it."""

    def __init__(self) -> None:
        self.services: dict[str, Mapping[str, grpc.RpcMethodHandler]] = {}

    def add_generic_rpc_handlers(self, handlers: Any) -> None:
        pass  # the same handlers arrive by name through the call below

    def add_registered_method_handlers(
        self, service: str, handlers: Mapping[str, grpc.RpcMethodHandler]
    ) -> None:
        self.services[service] = handlers


def _encoded(handler: Any) -> grpc.RpcMethodHandler:
    kw = {"request_deserializer": handler.request_deserializer,
          "response_serializer": passthrough(handler.response_serializer)}
    if handler.unary_stream is not None:
        return grpc.unary_stream_rpc_method_handler(handler.unary_stream, **kw)
    if handler.unary_unary is not None:
        return grpc.unary_unary_rpc_method_handler(handler.unary_unary, **kw)
    raise ValueError("only unary-request methods may send pre-serialized responses")


def with_encoded(add: AddServicer, methods: Collection[str]) -> AddServicer:
    """``add`` (a generated ``add_*Servicer_to_server``) whose ``methods``
    may yield or return pre-serialized ``bytes`` responses."""

    def add_encoded(servicer: Any, server: Any) -> None:
        captured = _Captured()
        add(servicer, captured)
        if not captured.services:
            raise RuntimeError(f"{getattr(add, '__name__', add)!r} registered no service")
        for service, handlers in captured.services.items():
            missing = set(methods) - set(handlers)
            if missing:
                raise ValueError(f"{service} has no method(s) {sorted(missing)}")
            rebuilt = {name: _encoded(h) if name in methods else h
                       for name, h in handlers.items()}
            server.add_generic_rpc_handlers(
                (grpc.method_handlers_generic_handler(service, rebuilt),))
            server.add_registered_method_handlers(service, rebuilt)

    return add_encoded
