"""Pure planner of the scheduler config (no asyncio, grpc or etcd).

The clock, ids and randomness come in (the
:class:`~drover.state.core.plan.WriteContext`), as for every core.
"""
