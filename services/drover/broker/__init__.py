"""The eval broker service: delivers evaluations to scheduler workers.

Leader only. The pure core (the :mod:`drover.broker.core` package; its
state machine is :class:`~drover.broker.core.broker.EvalBroker`) holds
Nomad's eval broker semantics with no asyncio, no etcd and no gRPC: it is
driven by an injected monotonic clock and random source, and it answers
every state-store write it needs as a frozen *effect*
(:mod:`drover.broker.core.effects`) for the async shell to perform. The
shell, the modules at this package's top level (long-poll Dequeue waiters,
timers, state-service writes with the leader fence, leader election), is
built on top of that API.

Delivery is at-least-once: an evaluation leaves the broker only when a worker
acks it, an operator cancels it, the state store says it is terminal, or a
newer evaluation of the same job supersedes it. Nothing lives only in the
leader's memory: every decision that must survive a failover is an effect
written to the state store, and a new leader rebuilds the queues from there
(:meth:`EvalBroker.restore`, or a hot standby fed by the event stream and
promoted with :meth:`EvalBroker.enable`).
"""
