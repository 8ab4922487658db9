"""Per-node live reservations kept by the tables as they apply changes
(:mod:`drover.state.core.node_rooms`): always what decoding every allocation
would say, through puts, moves, status changes, deletes, replays and a load."""

from __future__ import annotations

import random
from types import SimpleNamespace

from state_core_data import KEYS

from drover.api.types.v1 import allocation_pb2
from drover.state.core import codec
from drover.state.core.tables import Tables
from drover.worker.resources import Vec, is_live

RUN = allocation_pb2.ALLOC_DESIRED_STATUS_RUN
DESIRED = [RUN, RUN, RUN, allocation_pb2.ALLOC_DESIRED_STATUS_STOP,
           allocation_pb2.ALLOC_DESIRED_STATUS_EVICT]
CLIENT = [allocation_pb2.ALLOC_CLIENT_STATUS_PENDING, allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING,
          allocation_pb2.ALLOC_CLIENT_STATUS_RUNNING, allocation_pb2.ALLOC_CLIENT_STATUS_COMPLETE,
          allocation_pb2.ALLOC_CLIENT_STATUS_FAILED, allocation_pb2.ALLOC_CLIENT_STATUS_LOST]


def _expected(tables: Tables) -> dict[str, dict[str, Vec]]:
    """Per node, its live allocations decoded from the allocation table."""
    out: dict[str, dict[str, Vec]] = {}
    for nsid, entry in tables[codec.ALLOCATIONS].objects.items():
        a = allocation_pb2.Allocation.FromString(entry[0])
        if is_live(a) and a.node_id:
            out.setdefault(a.node_id, {})[nsid] = Vec.of(a.resources)
    return out


def _held(tables: Tables, nodes: list[str]) -> dict[str, dict[str, Vec]]:
    out = {}
    for node in nodes:
        live = dict(tables.rooms.live(node))
        total = tables.rooms.total(node)
        assert total == sum(live.values(), Vec()), node
        if live:
            out[node] = live
    return out


def test_rooms_are_what_decoding_every_allocation_says() -> None:
    rng = random.Random(31)
    nodes = [f"n{i}" for i in range(5)]
    tables = Tables(KEYS)
    rev = 0
    last: tuple[bytes, bytes, int] | None = None
    for _ in range(2000):
        rev += 1
        aid = f"a{rng.randrange(40)}"
        key = KEYS.key(codec.ALLOCATIONS, "default", aid)
        if last is not None and rng.random() < 0.05:
            # the watch and the writer both apply a put: the second changes nothing
            tables.apply(last[0], last[1], last[2], last[2], False)
        elif rng.random() < 0.1:
            tables.apply(key, b"", 0, rev, True)
        else:
            a = allocation_pb2.Allocation(
                id=aid, namespace="default", job_id="j", node_id=rng.choice(nodes),
                desired_status=rng.choice(DESIRED), client_status=rng.choice(CLIENT))
            a.resources.cpu, a.resources.memory_mb = rng.choice([(100, 300), (500, 256)])
            last = (key, codec.encode(a), rev)
            tables.apply(key, last[1], rev, rev, False)
        assert _held(tables, nodes) == _expected(tables)

    loaded = Tables(KEYS)
    loaded.stage([SimpleNamespace(key=KEYS.key(codec.ALLOCATIONS, *nsid.split("/", 1)),
                                  value=e[0], create_revision=e[2][0], mod_revision=e[1])
                  for nsid, e in tables[codec.ALLOCATIONS].objects.items()])
    loaded.load_staged()
    assert _held(loaded, nodes) == _expected(tables)
