"""Which calls are reads, safe to send again: the one rule (pure).

A call may be repeated on another server only when that cannot have two
effects. Every client that repeats calls asks :func:`is_read`: the failover
channel (:mod:`drover.rpc.failover`), the channels' retry service config
(:mod:`drover.rpc.channels`) and the proxy's retry policy
(``drover.proxy.core.retry``). This module imports nothing impure: pure cores
use it.

Reads, by method (the full gRPC path ``/pkg.Service/Method``; a bare method
name is judged by the prefix rule alone):

* ``Get*``, ``List*``, ``Count*``: the prefix followed by an upper-case
  letter (``GetJob``, ``ListEvaluations``, ``CountEvaluations``,
  ``GetBrokerStats``, ``ListQueue``, ...; not ``Getaway``, ``Listen``);
* the named reads of :data:`READ_METHODS`, each of its own service:
  ``StateService/Subscribe`` (the event stream changes nothing),
  ``StateService/PlanJob`` (a dry run of RegisterJob), the health
  ``Check`` and ``Watch``, reflection's ``ServerReflectionInfo``.

Everything else is a write, including ``Dequeue`` (it hands an evaluation
out and starts its nack timer: a blind retry would take a second one) and
``Ack``/``AckBatch``/``Nack``. A new RPC that is a read under another name
must be added to :data:`READ_METHODS`; the unit tests pin the
classification of every drover RPC.
"""

from __future__ import annotations

__all__ = ["READ_METHODS", "READ_PREFIXES", "is_read", "method_name"]

READ_PREFIXES: tuple[str, ...] = ("Get", "List", "Count")
#: Reads by name, each qualified by its service (``service/Method``): a
#: method of the same name elsewhere is not one unless its name says so.
READ_METHODS: frozenset[str] = frozenset({
    "drover.state.v1.StateService/Subscribe",
    "drover.state.v1.StateService/PlanJob",  # a dry run: writes nothing
    "grpc.health.v1.Health/Check",
    "grpc.health.v1.Health/Watch",
    "grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
    "grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
})


def method_name(method: str) -> str:
    """``/drover.state.v1.StateService/GetJob`` -> ``GetJob`` (bare names pass)."""
    return method.rsplit("/", 1)[-1]


def is_read(method: str) -> bool:
    """True if ``method`` (full gRPC path, or a bare name) only reads."""
    if method.lstrip("/") in READ_METHODS:
        return True
    name = method_name(method)
    return any(name.startswith(prefix) and name[len(prefix):][:1].isupper()
               for prefix in READ_PREFIXES)
