"""Subscribe checked per topic (:mod:`drover.acl.topics`), as Nomad's event
stream: read-job for the namespaced topics, node read for Node, management
for every other topic and for all topics at once; a stream of every
namespace delivers only the namespaces the token may read."""

from __future__ import annotations

import pytest

from drover.acl import Acl, Identity, IdentityKind, PermissionDenied, authorize, parse_policy
from drover.acl.table import TABLE
from drover.acl.topics import event_reader, may_read
from drover.api.state.v1 import state_pb2

SUB = "/drover.state.v1.StateService/Subscribe"
JOB, EVAL, NODE, CFG = (state_pb2.TOPIC_JOB, state_pb2.TOPIC_EVALUATION, state_pb2.TOPIC_NODE,
                        state_pb2.TOPIC_SCHEDULER_CONFIG)


def _who(doc: str) -> Identity:
    return Identity(IdentityKind.CLIENT, Acl.compile([parse_policy("p", doc)]), "acc")


def _check(who: Identity, *topics: int, namespace: str = "") -> str | None:
    """None when admitted, else the ErrorInfo's topic."""
    req = state_pb2.SubscribeRequest(namespace=namespace)
    req.topics.extend(topics)  # type: ignore[arg-type]  # unknown values too
    try:
        authorize(who, TABLE[SUB], req, SUB)
    except PermissionDenied as err:
        return err.metadata["topic"]
    return None


def test_each_topic_needs_what_nomad_asks() -> None:
    team = _who("namespace: {team-a: {policy: read}}")
    assert _check(team, JOB, EVAL, namespace="team-a") is None
    assert _check(team, JOB, namespace="team-b") == "TOPIC_JOB"
    assert _check(team, JOB, EVAL, namespace="*") is None  # filtered per event
    assert _check(team, NODE) == "TOPIC_NODE"
    assert _check(team, CFG) == "TOPIC_SCHEDULER_CONFIG"
    assert _check(team) == "*"  # every topic: management
    nodes = _who("node: {policy: read}")
    assert _check(nodes, NODE) is None
    assert _check(nodes, NODE, JOB) == "TOPIC_JOB"  # one refused topic refuses the stream
    assert _check(nodes, state_pb2.Topic.Value("TOPIC_NODE") + 40) is not None  # unknown
    assert _check(_who("namespace: {'*': {policy: deny}}"), JOB, namespace="*") == "TOPIC_JOB"
    mgmt = Identity(IdentityKind.MANAGEMENT, Acl(management=True), "m")
    server = Identity(IdentityKind.SERVER, Acl(management=True))
    for who in (mgmt, server):
        assert _check(who) is None and _check(who, CFG) is None


def test_a_stream_of_every_namespace_reads_only_those_allowed() -> None:
    team = _who("namespace: {'team-*': {policy: read}, team-secret: {policy: deny}}")
    reader = event_reader(team)
    assert reader is not None
    assert may_read(reader, "team-a") and not may_read(reader, "team-secret")
    assert not may_read(reader, "default")
    assert event_reader(None) is None  # ACLs off: everything
    assert event_reader(Identity(IdentityKind.MANAGEMENT, Acl(management=True))) is None


@pytest.mark.parametrize("namespace", ["", "*"])
def test_the_hub_filters_namespaced_events_by_the_reader(namespace: str) -> None:
    from drover.state.cache import Change
    from drover.state.core import codec
    from drover.state.subscribe import Interest, encode_responses

    reader = event_reader(_who("namespace: {a: {policy: read}}\nnode: {policy: read}"))
    changes = [Change(codec.JOBS, "a", "j1", 5, True, b"", 4),
               Change(codec.JOBS, "b", "j2", 6, True, b"", 4),
               Change(codec.NODES, codec.GLOBAL_NS, "n1", 7, True, b"", 4)]
    out = [state_pb2.SubscribeResponse.FromString(r) for r in encode_responses(
        changes, Interest(frozenset({JOB, NODE}), frozenset(), namespace, reader))]
    assert [(e.namespace, e.key) for r in out for e in r.events] == [("a", "j1"), ("", "n1")]
    everything = encode_responses(changes, Interest(frozenset({JOB, NODE}), frozenset(),
                                                    namespace))
    assert len(everything) == 3
