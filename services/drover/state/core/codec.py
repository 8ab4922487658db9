"""Proto <-> etcd value, and the object key layout.

An object is stored as its serialized proto at
``<root>/v1/<kind>/<namespace>/<id>``. ``create_index``/``modify_index`` are
*not* stored: they are etcd's create/mod revision of the key and are filled
in on decode, so they can never disagree with etcd. Objects without a
namespace (nodes, the scheduler config) use the namespace segment ``-``.
Job versions live under ``job_versions/<ns>/<job>/<version:020d>`` so a
prefix range lists one job's versions in version order.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from google.protobuf.message import Message

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import (
    allocation_pb2,
    deployment_pb2,
    evaluation_pb2,
    job_pb2,
    node_pb2,
    scheduler_pb2,
)
from drover.coord.keys import Keyspace

JOBS = "jobs"
JOB_VERSIONS = "job_versions"
EVALUATIONS = "evaluations"
DEPLOYMENTS = "deployments"
ALLOCATIONS = "allocations"
NODES = "nodes"
SCHEDULER_CONFIG = "scheduler_config"
#: Per-node usage records (:mod:`drover.state.allocations.core.usage`): cached, never listed.
NODE_USAGE = "node_usage"
#: The key segment of node liveness keys (:mod:`.liveness`): not an object
#: kind, but the tables keep which nodes hold one (:attr:`.tables.Tables.live`).
LIVENESS = "liveness"

#: The namespace segment of objects that have none.
GLOBAL_NS = "-"
SCHEDULER_CONFIG_ID = "config"

MESSAGES: dict[str, type[Message]] = {
    JOBS: job_pb2.Job,
    JOB_VERSIONS: job_pb2.Job,
    EVALUATIONS: evaluation_pb2.Evaluation,
    DEPLOYMENTS: deployment_pb2.Deployment,
    ALLOCATIONS: allocation_pb2.Allocation,
    NODES: node_pb2.Node,
    SCHEDULER_CONFIG: scheduler_pb2.SchedulerConfig,
    NODE_USAGE: node_pb2.NodeUsage,
}

TOPICS: dict[str, int] = {
    JOBS: state_pb2.TOPIC_JOB,
    EVALUATIONS: state_pb2.TOPIC_EVALUATION,
    DEPLOYMENTS: state_pb2.TOPIC_DEPLOYMENT,
    ALLOCATIONS: state_pb2.TOPIC_ALLOCATION,
    NODES: state_pb2.TOPIC_NODE,
    SCHEDULER_CONFIG: state_pb2.TOPIC_SCHEDULER_CONFIG,
}

#: Event payload oneof field per kind.
PAYLOAD_FIELD: dict[str, str] = {
    JOBS: "job",
    EVALUATIONS: "evaluation",
    DEPLOYMENTS: "deployment",
    ALLOCATIONS: "allocation",
    NODES: "node",
    SCHEDULER_CONFIG: "scheduler_config",
}


_tuple = tuple.__new__


class ObjectKey(NamedTuple):
    """A parsed object key (a NamedTuple: parsed once per cached change)."""

    kind: str
    namespace: str
    id: str


class KeyCodec:
    """Object keys under one :class:`Keyspace`."""

    def __init__(self, keyspace: Keyspace) -> None:
        self.keyspace = keyspace
        self.base = keyspace.base
        self._base_b = keyspace.base.encode()

    def key(self, kind: str, namespace: str, object_id: str) -> bytes:
        return f"{self.base}{kind}/{namespace}/{object_id}".encode()

    def prefix(self, kind: str, namespace: str | None = None) -> bytes:
        if namespace is None:
            return f"{self.base}{kind}/".encode()
        return f"{self.base}{kind}/{namespace}/".encode()

    def version_key(self, namespace: str, job_id: str, version: int) -> bytes:
        return self.key(JOB_VERSIONS, namespace, f"{job_id}/{version:020d}")

    def parse(self, key: bytes) -> ObjectKey | None:
        """The object a key names, or None for keys that are not objects."""
        if not key.startswith(self._base_b):
            return None
        parts = key[len(self._base_b) :].decode().split("/", 2)
        if len(parts) != 3 or parts[0] not in MESSAGES:
            return None
        # tuple.__new__ is what ObjectKey's own __new__ does, minus a Python
        # call: a written object's key is parsed two or three times.
        return _tuple(ObjectKey, parts)


def encode(msg: Message) -> bytes:
    """The stored value: the proto without its etcd-derived indexes.

    ``msg`` is left as it was: the indexes are cleared for the serialization
    and put back, rather than serializing a copy (a write encodes every
    object it stores, so a copy per object was measurable on the broker's
    path). Both are plain ``uint64`` fields (no presence), so clearing and
    restoring is exact."""
    m: Any = msg
    create, modify = m.create_index, m.modify_index
    if not (create or modify):
        return msg.SerializeToString()
    m.create_index = 0
    m.modify_index = 0
    try:
        return msg.SerializeToString()
    finally:
        m.create_index = create
        m.modify_index = modify


def decode(kind: str, value: bytes, create_rev: int, mod_rev: int) -> Any:
    return decode_into(kind, MESSAGES[kind](), value, create_rev, mod_rev)


def decode_into(kind: str, msg: Any, value: bytes, create_rev: int, mod_rev: int) -> Any:
    """Parse a stored ``value`` into ``msg`` (empty, of the kind's type, e.g. an
    event's payload field: no copy afterwards) and fill in the indexes; ``msg``."""
    msg.ParseFromString(value)
    msg.create_index = create_rev
    msg.modify_index = mod_rev
    # A write cannot know its own revision, so indexes that name "this txn"
    # are stored as 0 and resolved here: a job's spec index (stored 0 by the
    # txn that changed the spec) is its mod revision then; an evaluation's or
    # deployment's job indexes, written with the job, are their create revision.
    if kind in (JOBS, JOB_VERSIONS) and msg.job_modify_index == 0:
        msg.job_modify_index = mod_rev if kind == JOBS else create_rev
    elif kind == EVALUATIONS and msg.job_modify_index == 0 and msg.job_id:
        msg.job_modify_index = create_rev
    elif kind == DEPLOYMENTS:
        msg.job_modify_index = msg.job_modify_index or create_rev
        msg.job_create_index = msg.job_create_index or create_rev
    return msg


def namespace_of(kind: str, msg: Any) -> str:
    if kind in (NODES, SCHEDULER_CONFIG, NODE_USAGE):
        return GLOBAL_NS
    return str(msg.namespace)
