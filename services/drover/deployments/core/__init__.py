"""The deployment watcher's pure core: one watcher per deployment and the
manager of all of them, the rules they apply (accounting, progress deadline,
auto-revert), the router of allocation changes, the evaluation batcher, and
the effects and requests they hand to the shell.

No asyncio, no grpc, no etcd client (tests/unit/test_architecture.py holds
every module here to that); the clock is passed in (wall-clock epoch seconds,
see :mod:`drover.deployments`), so every decision is reproducible in a unit
test with a virtual clock.
"""
