"""The eval broker's pure core: Nomad's broker semantics, no I/O.

Design: :class:`~.broker.EvalBroker` (:mod:`.broker`) is the state machine
the async shell drives (modes, the mode gate, operator calls, the timer
tick). It is composed of one concept per module: the held evaluations and
their transitions (:mod:`.held`, on :mod:`.record`, :mod:`.queues` and
:mod:`.listing`), feeding from the event stream (:mod:`.intake`, with the
standby's :mod:`.deferred` cancellations and the bulk :mod:`.restore`), the
worker side (:mod:`.delivery`, tokens from :mod:`.tokens`), the counters
and timings (:mod:`.stats`). Around it, pure helpers of the shell: the
settlement of an ack in flight (:mod:`.settlement`), the writer's batching
(:mod:`.write_batch`) and the ListQueue page view (:mod:`.queue_view`).

Invariants:

* pure: nothing here imports asyncio, grpc or an etcd client, directly or
  through a drover module (tests/unit/test_architecture.py holds every
  module under this package to it);
* time and randomness come in: a monotonic clock, a wall clock, a
  ``random.Random`` and an id factory are injected, so tests run on a
  virtual clock, deterministically;
* no write is made here: every state-store write the core needs is
  returned as a frozen effect (:mod:`.effects`) for the shell to perform
  with the leader fence; a leader's effects are returned, a standby's
  deferred until its promotion;
* at-least-once, one evaluation per job in flight: an evaluation leaves
  only when acked (after its outcome is durable), cancelled, found terminal
  or superseded.

Import from the modules themselves (``drover.broker.core.broker``...);
this package exports nothing.
"""
