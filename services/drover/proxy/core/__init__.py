"""The proxy's pure policy: which server a call goes to, when a failed call
may go elsewhere, and when every proxy replica has applied a change.

No asyncio, no grpc, no etcd client (tests/unit/test_architecture.py holds
every module here to that). The clock and the random source are passed in,
so every rule is unit-tested with a virtual clock and a seeded generator;
the shell (:mod:`drover.proxy`) does the I/O and applies these decisions.
"""
