"""EtcdKV's TxnRequest: every compare is ``target == value`` on its key (the
"mod" fast path and the others alike), every op in order, no else branch."""

from __future__ import annotations

from aetcd import rpc

from drover.coord.etcd_kv import txn_request
from drover.coord.kv import Compare, Delete, Put


def test_compares_of_every_target_and_ops_in_order() -> None:
    req = txn_request(
        [Compare(b"a", "mod", 7), Compare(b"b", "create", 3), Compare(b"c", "version", 0),
         Compare(b"d", "lease", 9), Compare(b"e", "mod", 0)],
        [Put(b"a", b"1"), Delete(b"b"), Put(b"c", b"2", lease=5)])
    got = [(c.key, c.result, c.target, c.WhichOneof("target_union"),
            getattr(c, c.WhichOneof("target_union") or "version")) for c in req.compare]
    assert got == [
        (b"a", rpc.Compare.EQUAL, rpc.Compare.MOD, "mod_revision", 7),
        (b"b", rpc.Compare.EQUAL, rpc.Compare.CREATE, "create_revision", 3),
        (b"c", rpc.Compare.EQUAL, rpc.Compare.VERSION, "version", 0),
        (b"d", rpc.Compare.EQUAL, rpc.Compare.LEASE, "lease", 9),
        (b"e", rpc.Compare.EQUAL, rpc.Compare.MOD, "mod_revision", 0),
    ]
    assert [op.WhichOneof("request") for op in req.success] == [
        "request_put", "request_delete_range", "request_put"]
    assert (req.success[0].request_put.key, req.success[0].request_put.value,
            req.success[0].request_put.lease) == (b"a", b"1", 0)
    assert req.success[1].request_delete_range.key == b"b"
    assert req.success[1].request_delete_range.range_end == b""
    assert req.success[2].request_put.lease == 5
    assert not req.failure
