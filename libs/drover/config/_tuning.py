"""The services' tunables as `drover serve` flags with ``DROVER_*`` twins.

Each :class:`Tunable` is one field of a service's own frozen config
(``BrokerConfig``, ``ShellConfig``, ``BatcherConfig``, ``CacheConfig``,
``SubscribeConfig``, ``WriterConfig``), named in its ``config``. This table
is the one home of their defaults: the dataclass field takes it
(``max_txn_ops: int = tunable_default("state_max_txn_ops")``), ``--help``
shows it, and every app builds its configs the one way,
:func:`tuned_config` (the dataclass with the tunables the settings carry; a
flag left unset keeps the default). Each bound is the table's
``minimum``, checked by the flags and by :func:`check_tunables` (which every
such config calls when built); the service checks the rest. The
names carry the service (``--broker-nack-timeout`` /
``DROVER_BROKER_NACK_TIMEOUT``) because every service reads the one
ConfigMap of the Kubernetes manifests.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from drover.coord.kv import MAX_TXN_OPS

if TYPE_CHECKING:
    from drover.config._settings import ServeSettings

_C = TypeVar("_C")


@dataclass(frozen=True)
class Tunable:
    service: str
    name: str
    #: The config dataclass the tunable sets (its class name) ...
    config: str
    #: ... and the field of it.
    field: str
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


def _t(service: str, name: str, into: str, kind: type, default: float, minimum: float,
       unit: str, help: str) -> Tunable:
    """``into``: ``"Config"`` (the field is ``name``) or ``"Config.field"``."""
    config, _, field = into.partition(".")
    return Tunable(service, name, config, field or name, kind, default, minimum, unit, help)


TUNABLES: tuple[Tunable, ...] = (
    _t("broker", "nack_timeout", "BrokerConfig", float, 60.0, 0.001, "s",
       "an unacked evaluation is taken back (nacked) after this long without an Ack"),
    _t("broker", "delivery_limit", "BrokerConfig", int, 3, 1, "",
       "deliveries before an evaluation goes to the failed queue"),
    _t("broker", "initial_nack_delay", "BrokerConfig", float, 1.0, 0, "s",
       "redelivery delay after the first nack"),
    _t("broker", "subsequent_nack_delay", "BrokerConfig", float, 20.0, 0, "s",
       "redelivery delay after the n-th nack is this times (n - 1)"),
    _t("broker", "failed_follow_up_base", "BrokerConfig", float, 60.0, 0, "s",
       "a failed evaluation's follow-up waits this long ..."),
    _t("broker", "failed_follow_up_range", "BrokerConfig", float, 300.0, 0, "s",
       "... plus up to this much at random"),
    _t("broker", "max_batch", "ShellConfig", int, 256, 1, "",
       "most evaluations one Dequeue hands out / acks one AckBatch takes"),
    _t("broker", "max_poll", "ShellConfig", float, 60.0, 0.001, "s",
       "longest a Dequeue long poll may wait"),
    _t("broker", "max_txn_ops", "ShellConfig", int, MAX_TXN_OPS, 4, "",
       "etcd's --max-txn-ops as the state service is told it: the broker's writes "
       "carry at most this less one evaluations (shrunk to a state replica's own cap "
       "if it refuses more)"),
    _t("broker", "heartbeat_check_interval", "ShellConfig", float, 1.0, 0.01, "s",
       "the leader asks the state service this often to mark down nodes whose "
       "heartbeat lease expired"),
    _t("deployments", "batch_window", "BatcherConfig.window", float, 0.25, 0, "s",
       "follow-up evaluations are batched over this window"),
    _t("deployments", "batch_max", "BatcherConfig.max_batch", int, 64, 1, "",
       "most follow-up evaluations written in one batch"),
    _t("deployments", "progress_window", "BatcherConfig.progress_window", float, 1.0, 0, "s",
       "a deployment's count-only progress is written at most once per this window"),
    _t("state", "cache_page_size", "CacheConfig.page_size", int, 5000, 1, "",
       "keys per etcd range page when the cache lists the keyspace"),
    _t("state", "sync_timeout", "CacheConfig", float, 10.0, 0.001, "s",
       "longest a consistent read waits for the cache to catch up"),
    _t("state", "subscribe_buffer", "SubscribeConfig.buffer_revisions", int, 1000, 1, "",
       "revisions of events kept to resume Subscribe streams (from_index)"),
    _t("state", "subscribe_replay_events", "SubscribeConfig.replay_events", int, 20_000, 1, "",
       "most recent events a replica keeps for Subscribe resumes (older ones are read "
       "from etcd's history)"),
    _t("state", "subscribe_replay_window", "SubscribeConfig.replay_window", float, 60.0, 0.001,
       "s", "seconds of recent events a replica keeps for Subscribe resumes (at most "
       "--state-subscribe-replay-events)"),
    _t("state", "subscribe_heartbeat", "SubscribeConfig.heartbeat", float, 10.0, 0.001, "s",
       "heartbeat interval of an idle Subscribe stream"),
    _t("state", "max_txn_ops", "WriterConfig", int, MAX_TXN_OPS, 4, "",
       "etcd's --max-txn-ops (never more): the largest txn a write sends, e.g. a "
       "DeleteEvaluations page"),
    _t("state", "delete_txns_in_flight", "WriterConfig", int, 4, 1, "",
       "DeleteEvaluations by filter: etcd txns one call keeps in flight (its page, "
       "at most this many txns of the largest size, spread over them)"),
    # Nomad's heartbeat defaults (nomad/config.go): a node's TTL is
    # max(min_heartbeat_ttl, nodes / max_heartbeats_per_second) plus a random
    # stagger; it is marked down after TTL + heartbeat_grace without one.
    _t("state", "min_heartbeat_ttl", "LivenessConfig", float, 10.0, 1.0, "s",
       "the shortest heartbeat TTL a node is given"),
    _t("state", "max_heartbeats_per_second", "LivenessConfig", float, 50.0, 0.001, "",
       "the TTL grows with the number of nodes so that all of them together "
       "heartbeat at most this often"),
    _t("state", "heartbeat_grace", "LivenessConfig", float, 10.0, 1.0, "s",
       "a node is marked down this long after its TTL passed without a heartbeat"),
    _t("state", "etcd_write_timeout", "WriterConfig", float, 3.0, 0.001, "s",
       "longest an etcd write (txn) may go unanswered: then OUTCOME_UNKNOWN, and the etcd "
       "member is left for another (below etcd's own 7 s request timeout, which a member "
       "that lost its leader waits out)"),
    _t("state", "job_tracked_versions", "WriterConfig", int, 6, 1, "",
       "versions of a job kept (Nomad's job_tracked_versions), plus its newest stable one"),
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


_BY_PARAM: dict[str, Tunable] = {t.param: t for t in TUNABLES}


def tunable_default(param: str) -> Any:
    """The default of the tunable ``param`` (``"broker_nack_timeout"``)."""
    t = _BY_PARAM[param]
    return t.kind(t.default)


def check_tunables(config: object) -> None:
    """Refuse ``config`` (a service's config dataclass) when a tunable field
    of it is below its :attr:`Tunable.minimum`: the table is the one home of
    each bound (the flags refuse the same values). A config's
    ``__post_init__`` calls this, then checks the fields no flag sets."""
    for t in TUNABLES:
        if t.config == type(config).__name__:
            value = getattr(config, t.field)
            if value < t.minimum:
                raise ValueError(f"{t.field} must be at least {t.minimum:g}, got {value}")


def tuned_config(cls: type[_C], settings: ServeSettings, **fixed: Any) -> _C:
    """``cls`` (a service's config dataclass) with the tunables ``settings``
    carries for it (flags/env; unset ones keep the default) and ``fixed``
    (fields taken from elsewhere in the settings)."""
    mine = [t for t in TUNABLES if t.config == cls.__name__]
    if not mine:
        raise ValueError(f"no tunable sets a {cls.__name__}")
    given = dict(settings.tuning)
    values = {t.field: t.kind(given[t.param]) for t in mine if t.param in given}
    return cls(**values, **fixed)
