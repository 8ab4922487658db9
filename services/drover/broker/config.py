"""Broker tunables, in one frozen dataclass; the defaults of the ones a flag
sets live in :data:`drover.config.TUNABLES`.

Numbers follow Nomad's eval broker: a 60 s nack timeout, a delivery limit of
3, a 1 s first redelivery delay and 20 s times (n - 1) after that, and a
failed evaluation's follow-up delayed by 1 min plus up to 5 min at random.
"""

from __future__ import annotations

from dataclasses import dataclass

from drover.config import check_tunables, tunable_default

__all__ = ["BrokerConfig"]


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    # An unacked evaluation is taken back (a nack) after this long without
    # an Ack or OutstandingReset.
    nack_timeout: float = tunable_default("broker_nack_timeout")
    # Deliveries before an evaluation is failed instead of redelivered.
    delivery_limit: int = tunable_default("broker_delivery_limit")
    # Redelivery delay after the first nack ...
    initial_nack_delay: float = tunable_default("broker_initial_nack_delay")
    # ... and after the n-th nack (n >= 2): subsequent_nack_delay * (n - 1).
    subsequent_nack_delay: float = tunable_default("broker_subsequent_nack_delay")
    # Each nack delay is stretched by a random fraction in [0, jitter) so
    # that evaluations nacked together (a crashed worker) do not return as
    # a herd.
    nack_delay_jitter: float = 0.1
    # The follow-up of a failed evaluation waits base + uniform(0, range).
    failed_follow_up_base: float = tunable_default("broker_failed_follow_up_base")
    failed_follow_up_range: float = tunable_default("broker_failed_follow_up_range")
    # Samples kept per timing summary (reservoir sampling: bounded memory,
    # unbiased over the broker's lifetime).
    timing_reservoir: int = 1024

    def __post_init__(self) -> None:
        check_tunables(self)
        if self.nack_delay_jitter < 0:
            raise ValueError("nack_delay_jitter must not be negative")
        if self.timing_reservoir < 1:
            raise ValueError("timing_reservoir must be at least 1")

    def nack_delay(self, deliveries: int) -> float:
        """The redelivery delay after a nack of delivery number ``deliveries``, sans jitter."""
        if deliveries <= 0:
            return 0.0
        if deliveries == 1:
            return self.initial_nack_delay
        return self.subsequent_nack_delay * (deliveries - 1)


@dataclass(frozen=True, slots=True)
class ShellConfig:
    # Dequeue long-poll bounds (seconds): unset timeout, and the cap.
    default_poll: float = 5.0
    max_poll: float = tunable_default("broker_max_poll")
    # How long a Dequeue on the freshly elected (not yet established)
    # replica waits for it to serve before pointing elsewhere.
    establish_wait: float = 2.0
    # On resign, how long open polls wait to learn the next leader's address.
    hint_wait: float = 1.0
    # The most evaluations one Dequeue hands out, and acks one AckBatch takes.
    max_batch: int = tunable_default("broker_max_batch")
    # etcd's --max-txn-ops as the state service is told it (raise the two
    # together): the writer's txns carry at most this less one evaluations
    # (the state's revision marker). A state replica told less refuses a
    # bigger write naming its cap, and the writer shrinks to that.
    max_txn_ops: int = tunable_default("broker_max_txn_ops")
    # The leader has nodes whose heartbeat lease expired marked down this
    # often (drover.broker.heartbeats).
    heartbeat_check_interval: float = tunable_default("broker_heartbeat_check_interval")

    def __post_init__(self) -> None:
        check_tunables(self)
