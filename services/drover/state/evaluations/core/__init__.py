"""Pure planners and rules of the evaluations family (no asyncio, grpc or etcd).

The clock, ids and randomness come in (the
:class:`~drover.state.core.plan.WriteContext`), as for every core.
"""
