"""The state service's view of the one etcd layer (:mod:`drover.coord.kv`,
implemented on etcd by :mod:`drover.coord.etcd_kv` and in memory by
:mod:`drover.coord.memkv`): the types re-exported under the names the
service's modules import, and :class:`EtcdStore`, the layer's
:class:`~drover.coord.etcd_kv.EtcdKV` with the state service's txn spans and
metrics (``drover.state.etcd.*``)."""

from __future__ import annotations

import grpc

from drover.coord.connect import EtcdClient
from drover.coord.etcd_kv import EtcdKV
from drover.coord.kv import (
    KV,
    MAX_TXN_OPS,
    Compacted,
    Compare,
    Delete,
    KVStore,
    LeaseKV,
    LeaseNotFound,
    Op,
    Put,
    RangePage,
    TxnResult,
    Watch,
    WatchBatch,
    WatchEvent,
    prefix_end,
)

__all__ = [
    "KV", "MAX_TXN_OPS", "Compacted", "Compare", "Delete", "EtcdStore", "KVStore", "LeaseKV",
    "LeaseNotFound", "Op", "Put", "RangePage", "TxnResult", "Watch", "WatchBatch", "WatchEvent",
    "prefix_end",
]


class EtcdStore(EtcdKV):
    """:class:`EtcdKV` measured as the state service's etcd client."""

    def __init__(self, etcd: EtcdClient | grpc.aio.Channel, *, timeout: float = 10.0,
                 max_txn_ops: int = MAX_TXN_OPS) -> None:
        super().__init__(etcd, timeout=timeout, max_txn_ops=max_txn_ops,
                         telemetry="drover.state")
