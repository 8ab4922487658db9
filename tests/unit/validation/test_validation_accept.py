"""The accept-only fast path of check_request: it never accepts what the
field walk refuses (seeded random messages of every request type, good
and bad values mixed), and it does vouch for ordinary requests (else it
would only add cost)."""

from __future__ import annotations

import math
import random
from typing import Any, cast

import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from drover.api.acl.v1 import acl_pb2
from drover.api.broker.v1 import broker_pb2
from drover.api.deployments.v1 import deployments_pb2
from drover.api.proxy.v1 import proxy_pb2
from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import evaluation_pb2, job_pb2
from drover.errors import InvalidArgument
from drover.validation import Limits, check_request
from drover.validation.accept import acceptor
from drover.validation.fields import _walk

_T = FieldDescriptor
#: Small caps, so random values cross them often.
SMALL = Limits(max_id=8, max_string=12, max_filter=12, max_page_token=12, max_document=12,
               max_map_key=4, max_map_value=6, max_bytes=6, max_repeated=3,
               max_map_entries=2, max_depth=3)

#: (good, bad) values; "bad" ones may pass some fields (an id of 9 chars is
#: a fine 9-char type name; "*" is a namespace).
STRINGS = (["", "a", "ok-1_.x"], ["*", "bad id", "abcdefghi", "x" * 13, "\u00e9", "a/b"])
INT32 = ([0, 1, 50, 100, 2**31 - 1], [-1, 101, -(2**31)])
UINT64 = ([0, 7, 2**63 - 1], [2**63, 2**64 - 1])
FLOATS = ([0.0, -2.5], [math.inf, -math.inf, math.nan])
SECONDS = ([0, 1, 253_402_300_799], [-1, 315_576_000_000, 315_576_000_001, 253_402_300_800,
                                     -62_135_596_800, -62_135_596_801])
NANOS = ([0, 5, 999_999_999], [-1, 1_000_000_000])


class Gen:
    """Random messages with good values and at most ONE bad choice (a bad
    value, one entry too many, one level too deep, a map): a message with
    several bad values would be refused whichever check is wrong."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.budget = 0
        self.q = 0.0

    def bad(self) -> bool:
        if self.budget and self.rng.random() < self.q:
            self.budget -= 1
            return True
        return False

    def pick(self, choices: tuple[list[Any], list[Any]]) -> Any:
        return self.rng.choice(choices[1] if self.bad() else choices[0])

    def scalar(self, fd: FieldDescriptor) -> Any:
        t, rng = fd.type, self.rng
        if t == _T.TYPE_STRING:
            return self.pick(STRINGS)
        if t == _T.TYPE_BYTES:
            return self.pick(([b"", b"abc"], [b"x" * 7]))
        if t == _T.TYPE_ENUM:
            assert fd.enum_type is not None
            return self.pick((list(fd.enum_type.values_by_number), [99]))
        if t == _T.TYPE_BOOL:
            return rng.random() < 0.5
        if t in (_T.TYPE_UINT64, _T.TYPE_FIXED64):
            return self.pick(UINT64)
        if t in (_T.TYPE_UINT32, _T.TYPE_FIXED32):
            return rng.choice([0, 1, 2**32 - 1])
        if t in (_T.TYPE_INT64, _T.TYPE_SINT64, _T.TYPE_SFIXED64):
            return rng.choice([0, -3, 2**63 - 1])
        if t in (_T.TYPE_DOUBLE, _T.TYPE_FLOAT):
            return self.pick(FLOATS)
        return self.pick(INT32)

    def count(self) -> int:
        return 4 if self.bad() else self.rng.randint(0, 3)

    def fill(self, msg: Any, depth: int, p: float) -> None:
        """Set a random share ``p`` of ``msg``'s fields (depth-bounded)."""
        d: Descriptor = msg.DESCRIPTOR
        if d.full_name in ("google.protobuf.Duration", "google.protobuf.Timestamp"):
            msg.seconds, msg.nanos = self.pick(SECONDS), self.pick(NANOS)
            return
        for fd in d.fields:
            if self.rng.random() > p:
                continue
            sub = fd.message_type
            if sub is not None and sub.GetOptions().map_entry:
                if self.bad():  # any entry: the walk's to judge
                    m = getattr(msg, fd.name)
                    val_fd = sub.fields_by_name["value"]
                    k: Any = "k" if sub.fields_by_name["key"].type == _T.TYPE_STRING else 1
                    if val_fd.message_type is not None:
                        m[k].SetInParent()
                    else:
                        m[k] = "v" if val_fd.type == _T.TYPE_STRING else 0
            elif sub is not None:
                # SMALL.max_depth is 3: a fourth level is one bad choice.
                if depth + 1 > 3 and not self.bad():
                    continue
                if fd.is_repeated:
                    for _ in range(self.count()):
                        self.fill(getattr(msg, fd.name).add(), depth + 1, p)
                else:
                    self.fill(getattr(msg, fd.name), depth + 1, p)
                    getattr(msg, fd.name).SetInParent()
            elif fd.is_repeated:
                getattr(msg, fd.name).extend(self.scalar(fd) for _ in range(self.count()))
            else:
                setattr(msg, fd.name, self.scalar(fd))

    def message(self, cls: Any) -> Any:
        self.budget = 1 if self.rng.random() < 0.8 else 0
        self.q = self.rng.choice([0.02, 0.1, 0.3])
        msg = cls()
        self.fill(msg, 0, self.rng.choice([0.2, 0.5, 0.9]))
        return msg


def walk_accepts(msg: Message, limits: Limits) -> bool:
    try:
        _walk(msg, limits)
    except InvalidArgument:
        return False
    return True


#: Every message of every drover service (the acl file has the bytes field).
REQUESTS = [d for module in (acl_pb2, broker_pb2, deployments_pb2, proxy_pb2, state_pb2)
            for d in module.DESCRIPTOR.message_types_by_name.values()]


@pytest.mark.parametrize("seed", range(4))
def test_never_accepts_what_the_walk_refuses(seed: int) -> None:
    gen = Gen(random.Random(seed))
    classes = {d.full_name: d._concrete_class for d in REQUESTS}
    accepted = refused = 0
    for name in sorted(classes):
        for _ in range(25):
            msg = gen.message(classes[name])
            before = msg.SerializeToString()
            vouched = acceptor(msg.DESCRIPTOR, SMALL)(msg, 0)
            assert msg.SerializeToString() == before  # read only: nothing set
            if vouched:
                accepted += 1
                assert walk_accepts(msg, SMALL), (name, msg)
            elif not walk_accepts(msg, SMALL):
                refused += 1
    # Both outcomes were exercised, not just one.
    assert accepted > 100 and refused > 100


def _descriptor(msg: Message) -> Descriptor:
    """``msg``'s descriptor as :func:`acceptor` types it (the stubs type it
    as either the Python or the upb class; the acceptor reads either)."""
    return cast(Descriptor, msg.DESCRIPTOR)


def test_vouches_for_ordinary_requests() -> None:
    evs = [evaluation_pb2.Evaluation(
        id=f"e-{i}", namespace="default", priority=50, type="service", job_id=f"j{i}",
        status=evaluation_pb2.EVALUATION_STATUS_COMPLETE, modify_index=12, create_index=11)
        for i in range(100)]
    for ev in evs:
        ev.create_time.seconds = ev.modify_time.seconds = 1_700_000_000
    limits = Limits()
    for req in (state_pb2.UpsertEvaluationsRequest(evaluations=evs),
                state_pb2.UpdateEvaluationsRequest(updates=evs[:50], creates=evs[50:]),
                broker_pb2.AckBatchRequest(acks=[broker_pb2.AckRequest(eval_id="a", token="t")]),
                state_pb2.ListEvaluationsRequest(namespace="*", filter='status == "pending"')):
        assert acceptor(_descriptor(req), limits)(req, 0), req.DESCRIPTOR.name


def test_what_it_cannot_vouch_for_goes_to_the_walk() -> None:
    """A map with entries is left to the walk: accepted there when good, and
    refused with the walk's path when not."""
    job = job_pb2.Job(id="web", meta={"owner": "team a"})
    assert not acceptor(_descriptor(job), Limits())(job, 0)
    check_request(state_pb2.RegisterJobRequest(job=job))
    job.meta["k" * 300] = "v"
    with pytest.raises(InvalidArgument) as err:
        check_request(state_pb2.RegisterJobRequest(job=job))
    assert err.value.metadata["field"].startswith("job.meta")


def test_errors_are_the_walks_word_for_word() -> None:
    req = state_pb2.UpsertEvaluationsRequest()
    req.evaluations.add(id="ok")
    req.evaluations.add(id="e", priority=101)
    with pytest.raises(InvalidArgument) as err:
        check_request(req)
    assert err.value.metadata["field"] == "evaluations[1].priority"
    assert err.value.message == "evaluations[1].priority: must be 1..100 (0: the default), got 101"
