"""Subscribe, checked per topic as Nomad's event stream is (pure).

Nomad (``nomad/event_endpoint.go``, ``validateNsOp``) checks each topic a
subscription names:

* Job, Evaluation, Deployment, Allocation: ``read-job`` in the namespace;
* Node: node read (``node: {policy: read}`` or write);
* every other topic (drover's scheduler config has no Nomad topic) and
  the all-topics subscription (no topics named, Nomad's ``*``):
  a management token.

A subscription to every namespace (``""`` or ``*``) is admitted when
``read-job`` holds in *some* namespace, and then delivers only the
events of namespaces where it holds (:func:`event_reader`): one namespace
the token may not read never leaks through ``*``. Node and scheduler
config events are global; their topic rule admitted them.

Invariant: whatever admits a stream, the events it delivers are exactly
those the same token could read one by one (GetJob, GetNode, ...).
"""

from __future__ import annotations

from typing import Any

from drover.acl.acl import ALL_NAMESPACES, Acl, Identity, IdentityKind
from drover.acl.errors import PermissionDenied
from drover.acl.policy import Level
from drover.api.state.v1 import state_pb2

__all__ = ["NAMESPACED_TOPICS", "READ_JOB", "authorize_topics", "event_reader"]

READ_JOB = "read-job"

#: Topics whose events belong to a namespace: ``read-job`` there.
NAMESPACED_TOPICS = frozenset({
    state_pb2.TOPIC_JOB, state_pb2.TOPIC_EVALUATION,
    state_pb2.TOPIC_DEPLOYMENT, state_pb2.TOPIC_ALLOCATION,
})


def _topic_name(topic: int) -> str:
    try:
        return state_pb2.Topic.Name(topic)  # type: ignore[arg-type]
    except ValueError:
        return str(topic)


def _all_namespaces(namespace: str) -> bool:
    return namespace in ("", ALL_NAMESPACES)


def _topic_denial(acl: Acl, topic: int, namespace: str) -> str | None:
    """Why ``acl`` may not follow ``topic`` in ``namespace``; None: it may."""
    if topic in NAMESPACED_TOPICS:
        if _all_namespaces(namespace):
            if acl.allow_any_namespace(READ_JOB):
                return None
            return f"namespace capability {READ_JOB} in some namespace"
        if acl.allow_namespace(namespace, READ_JOB):
            return None
        return f"namespace capability {READ_JOB} in namespace {namespace[:80]!r}"
    if topic == state_pb2.TOPIC_NODE:
        return None if acl.allow_global("node", Level.READ) else "node read"
    return "a management token"


def authorize_topics(identity: Identity, request: Any, method: str) -> None:
    """Admit a Subscribe ``request`` (module doc), or :class:`PermissionDenied`
    naming the first topic refused and what it needs."""
    if identity.kind in (IdentityKind.SERVER, IdentityKind.MANAGEMENT):
        return
    name = method.rsplit("/", 1)[-1]
    topics = list(getattr(request, "topics", ()))
    namespace = str(getattr(request, "namespace", ""))
    if not topics:
        raise PermissionDenied(
            f"{name} of every topic needs a management token; {identity.describe} "
            "is not one (name the topics)", metadata={"capability": "a management token",
                                                      "topic": "*"})
    for topic in dict.fromkeys(topics):
        need = _topic_denial(identity.acl, topic, namespace)
        if need is not None:
            raise PermissionDenied(
                f"{name} of topic {_topic_name(topic)} needs {need}; "
                f"{identity.describe} lacks it",
                metadata={"capability": need[:128], "topic": _topic_name(topic)})


def event_reader(identity: Identity | None) -> Acl | None:
    """The rules a stream's namespaced events are filtered by: None (every
    event) with ACLs off, for the server identity and for management."""
    if identity is None or identity.kind in (IdentityKind.SERVER, IdentityKind.MANAGEMENT):
        return None
    return identity.acl


def may_read(reader: Acl | None, namespace: str) -> bool:
    """Whether an event of ``namespace`` reaches a stream filtered by ``reader``."""
    return reader is None or reader.allow_namespace(namespace, READ_JOB)
