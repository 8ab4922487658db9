"""The services' tunables as `drover serve` flags with ``DROVER_*`` twins.

Each :class:`Tunable` is one field of a service's own frozen config
(``BrokerConfig``, ``ShellConfig``, ``BatcherConfig``, ``CacheConfig``,
``SubscribeConfig``); the service owns the default and the validation, this
table only names the flag, the environment variable and the help, and
repeats the default for ``--help`` (a unit test holds the two equal). A flag
left unset keeps the service's default. The names carry the service
(``--broker-nack-timeout`` / ``DROVER_BROKER_NACK_TIMEOUT``) because every
service reads the one ConfigMap of the Kubernetes manifests.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from drover.coord.kv import MAX_TXN_OPS


@dataclass(frozen=True)
class Tunable:
    service: str
    name: str
    kind: type
    default: float
    minimum: float
    unit: str
    help: str

    @property
    def flag(self) -> str:
        return f"--{self.service}-{self.name.replace('_', '-')}"

    @property
    def env(self) -> str:
        return f"DROVER_{self.service.upper()}_{self.name.upper()}"

    @property
    def param(self) -> str:
        return f"{self.service}_{self.name}"


def _t(service: str, name: str, kind: type, default: float, minimum: float, unit: str,
       help: str) -> Tunable:
    return Tunable(service, name, kind, default, minimum, unit, help)


TUNABLES: tuple[Tunable, ...] = (
    _t("broker", "nack_timeout", float, 60.0, 0.001, "s",
       "an unacked evaluation is taken back (nacked) after this long without an Ack"),
    _t("broker", "delivery_limit", int, 3, 1, "",
       "deliveries before an evaluation goes to the failed queue"),
    _t("broker", "initial_nack_delay", float, 1.0, 0, "s",
       "redelivery delay after the first nack"),
    _t("broker", "subsequent_nack_delay", float, 20.0, 0, "s",
       "redelivery delay after the n-th nack is this times (n - 1)"),
    _t("broker", "failed_follow_up_base", float, 60.0, 0, "s",
       "a failed evaluation's follow-up waits this long ..."),
    _t("broker", "failed_follow_up_range", float, 300.0, 0, "s",
       "... plus up to this much at random"),
    _t("broker", "max_batch", int, 256, 1, "",
       "most evaluations one Dequeue hands out / acks one AckBatch takes"),
    _t("broker", "max_poll", float, 60.0, 0.001, "s",
       "longest a Dequeue long poll may wait"),
    _t("broker", "max_txn_ops", int, MAX_TXN_OPS, 4, "",
       "etcd's --max-txn-ops as the state service is told it: the broker's writes "
       "carry at most this less one evaluations (shrunk to a state replica's own cap "
       "if it refuses more)"),
    _t("deployments", "batch_window", float, 0.25, 0, "s",
       "follow-up evaluations are batched over this window"),
    _t("deployments", "batch_max", int, 64, 1, "",
       "most follow-up evaluations written in one batch"),
    _t("state", "cache_page_size", int, 5000, 1, "",
       "keys per etcd range page when the cache lists the keyspace"),
    _t("state", "sync_timeout", float, 10.0, 0.001, "s",
       "longest a consistent read waits for the cache to catch up"),
    _t("state", "subscribe_buffer", int, 1000, 1, "",
       "revisions of events kept to resume Subscribe streams (from_index)"),
    _t("state", "subscribe_replay_events", int, 20_000, 1, "",
       "most events one Subscribe replays before it must resync"),
    _t("state", "subscribe_heartbeat", float, 10.0, 0.001, "s",
       "heartbeat interval of an idle Subscribe stream"),
    _t("state", "max_txn_ops", int, MAX_TXN_OPS, 4, "",
       "etcd's --max-txn-ops (never more): the largest txn a write sends, e.g. a "
       "DeleteEvaluations page"),
    _t("state", "delete_txns_in_flight", int, 4, 1, "",
       "DeleteEvaluations by filter: etcd txns one call keeps in flight (its page, "
       "at most this many txns of the largest size, spread over them)"),
)


def tunables(service: str) -> tuple[Tunable, ...]:
    return tuple(t for t in TUNABLES if t.service == service)


def tuning_from_options(opts: Mapping[str, object]) -> tuple[tuple[str, float], ...]:
    """``(param, value)`` for every tunable given as a flag or environment variable."""
    out = []
    for t in TUNABLES:
        value = opts.get(t.param)
        if value is not None:
            out.append((t.param, t.kind(value)))
    return tuple(out)
