"""Every config of the state service, one frozen dataclass per part.

Defaults of the tunables come from drover.config's tunables table
(:func:`drover.config.tunable_default`); :mod:`drover.state.app` is the one
place they are built from the serve settings (:func:`drover.config.tuned_config`).
The parts: the cache (:class:`CacheConfig`), reads (:class:`ReadConfig`,
:class:`BlockingConfig`), Subscribe (:class:`SubscribeConfig`), the writer
(:class:`WriterConfig`) and node liveness (:class:`LivenessConfig`), all in
one :class:`StateConfig`. Every default is a field's default here; the parts
take their config as a required argument.
"""

from __future__ import annotations

from dataclasses import dataclass

from drover.config import check_tunables, tunable_default
from drover.paging import PagingDefaults

#: Page sizes for every List; a call examines at most ``scan_budget`` objects
#: (a rare-match filter returns a short page with a token, never a long stall).
PAGING = PagingDefaults(default=100, maximum=1000, scan_budget=50_000)


@dataclass(frozen=True)
class CacheConfig:
    """The watch-fed cache (:mod:`drover.state.cache`): its list, sync and GC tuning."""

    page_size: int = tunable_default("state_cache_page_size")
    sync_timeout: float = tunable_default("state_sync_timeout")
    #: Longest the marker read of a consistent read (:meth:`Cache.sync`) may
    #: take: a replica cut from etcd refuses within this, not the caller's
    #: whole deadline (DESIGN "Faults we test against"), so the caller goes
    #: to another replica while it still has time. The read is one key: an
    #: etcd that answers at all answers it in milliseconds.
    marker_timeout: float = 3.0
    retry_delay: float = 0.5
    #: Freeze the GC's view of a list this large (see the module docstring).
    freeze_min_objects: int = 50_000
    #: Freeze again after this many watched events (see the module docstring).
    freeze_every_events: int = 50_000
    #: The young generation's GC threshold at least (module docstring; 0: leave it).
    gc_young_threshold: int = 50_000
    #: Listed keys decoded per event-loop turn (see ``_read_all``).
    stage_chunk: int = 1000
    #: Queued index removals applied per event-loop turn (see ``_drain``).
    drain_chunk: int = 512
    #: ``close`` waits this long for its cancelled tasks (``drover.tasks``).
    stop_timeout: float = 5.0

    def __post_init__(self) -> None:
        check_tunables(self)


@dataclass(frozen=True)
class SubscribeConfig:
    """Subscribe's streams (:mod:`drover.state.subscribe`): buffer, replay, heartbeats."""

    buffer_revisions: int = tunable_default("state_subscribe_buffer")
    #: The replay ring (:class:`drover.state.subscribe.Hub`) keeps the
    #: changes of the last ``replay_window`` seconds, at most
    #: ``replay_events`` of them.
    replay_events: int = tunable_default("state_subscribe_replay_events")
    replay_window: float = tunable_default("state_subscribe_replay_window")
    #: Default seconds between heartbeats of a quiet stream, and the most a
    #: client may ask for (``heartbeat_interval``); never less than ``min_heartbeat``.
    heartbeat: float = tunable_default("state_subscribe_heartbeat")
    min_heartbeat: float = 0.1
    #: A replica that has not heard from etcd for this long (its readiness
    #: check reads etcd every 2 s; else one consistent read proves contact)
    #: ends its streams ETCD_UNAVAILABLE: a
    #: heartbeat claims "nothing new up to this index", which a replica cut
    #: from etcd cannot know, and a subscriber (the broker's feed, the
    #: watcher's) would otherwise wait on it, learning nothing, until healed.
    max_silence: float = 3.0
    #: How often a quiet stream checks that silence.
    silence_check: float = 1.0

    def __post_init__(self) -> None:
        check_tunables(self)

    def heartbeat_for(self, asked: float) -> float:
        """The heartbeat interval of a stream whose client asked ``asked`` s (0: default)."""
        if asked <= 0:
            return self.heartbeat
        return min(self.heartbeat, max(self.min_heartbeat, asked))


@dataclass(frozen=True)
class WriterConfig:
    """The write pipeline (:mod:`drover.state.pipeline`) and the jobs' kept versions."""

    #: etcd's ``--max-txn-ops`` as the cluster runs it (the
    #: ``--state-max-txn-ops`` tunable; etcd does not report it, so it is
    #: told, never discovered): no txn of this writer exceeds it. Only calls
    #: that walk many objects (DeleteEvaluations by filter) grow with it.
    max_txn_ops: int = tunable_default("state_max_txn_ops")
    #: DeleteEvaluations by filter: txns one call keeps in flight (its page
    #: spread over them; see :mod:`drover.state.evaluations.delete_by_filter`). 4 met the
    #: issue-15 targets at 1M on a quiet 2-core machine with etcd beside
    #: state (51 % of raw etcd, p99 call 47-49 ms; 2 gave 44 %, p99 32 ms);
    #: where etcd and state share a loaded box, 2 keeps the p99 lower.
    delete_txns_in_flight: int = tunable_default("state_delete_txns_in_flight")
    #: Versions of a job kept (Nomad's ``job_tracked_versions``), plus its
    #: newest stable one (:mod:`drover.state.jobs.core.job_versions`).
    job_tracked_versions: int = tunable_default("state_job_tracked_versions")
    #: Longest one etcd txn may go unanswered (the ``--state-etcd-write-timeout``
    #: tunable): then OUTCOME_UNKNOWN and the etcd client leaves the member
    #: (:class:`drover.coord.etcd_kv.EtcdKV`). Below etcd's request timeout
    #: (5 s + 2 election timeouts), which a member that lost its leader waits
    #: out before answering; above a busy member's slowest honest txn.
    etcd_write_timeout: float = tunable_default("state_etcd_write_timeout")

    def __post_init__(self) -> None:
        check_tunables(self)


@dataclass(frozen=True)
class ReadConfig:
    """Every read (:mod:`drover.state.reads`): page sizes and QueryMeta's leader bound."""

    paging: PagingDefaults = PAGING
    leader_timeout: float = 10.0


@dataclass(frozen=True)
class BlockingConfig:
    """Blocking queries' waits (:mod:`drover.state.blocking`), Nomad's defaults."""

    default_wait: float = 300.0
    max_wait: float = 600.0
    jitter_fraction: float = 1 / 16


@dataclass(frozen=True)
class LivenessConfig:
    """Nomad's heartbeat tunables (their defaults live in drover.config)."""

    min_heartbeat_ttl: float = tunable_default("state_min_heartbeat_ttl")
    max_heartbeats_per_second: float = tunable_default("state_max_heartbeats_per_second")
    heartbeat_grace: float = tunable_default("state_heartbeat_grace")

    def __post_init__(self) -> None:
        check_tunables(self)


@dataclass(frozen=True)
class StateConfig:
    """Every part's config, as :func:`drover.state.app.state_config` builds
    them from the serve settings (the defaults are the fields' above)."""

    cache: CacheConfig
    subscribe: SubscribeConfig
    writer: WriterConfig
    liveness: LivenessConfig
    read: ReadConfig
    blocking: BlockingConfig
