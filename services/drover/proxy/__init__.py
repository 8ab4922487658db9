"""drover's client proxy: Nomad's client RPC proxy as a service.

The proxy keeps, per backend service (state, broker, deployments), an ordered
list of servers: the first one is in use, a failed call rotates it to the back,
a periodic rebalance shuffles and pings so that load spreads over the servers,
and discovery (etcd membership) plus static backup servers from config decide
who is on the list. It forwards drover RPCs to the server picked from that
list, routes leader-only services to the leader, and retries only what is
safe to retry.

Layout:

* :mod:`.core` is the pure policy: the server lists and their rebalance,
  the version gate, the retry rule, the convergence rule and stream resume,
  with no asyncio, no etcd and no gRPC (tests/unit/test_architecture.py
  holds every module under it to that). Time comes from an injected
  monotonic clock and randomness from an injected ``random.Random``, so
  every rule is unit-tested with a virtual clock and a seeded generator;
* the modules at the top are the async shell written on the core's API:
  the wiring (``app``), the thin servicer, forwarding (with its hold on
  stalled servers and the outcome of a failed attempt), discovery (watches
  membership and election keys in etcd), the rebalancer (pings with
  ``grpc.health.v1.Health/Check``), the convergence barrier, the channel
  pool, plus ``config``, ``errors`` and ``metrics``.
"""
