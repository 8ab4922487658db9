"""drover's client proxy: Nomad's client RPC proxy as a service.

The proxy keeps, per backend service (state, broker, deployments), an ordered
list of servers: the first one is in use, a failed call rotates it to the back,
a periodic rebalance shuffles and pings so that load spreads over the servers,
and discovery (etcd membership) plus static backup servers from config decide
who is on the list. It forwards drover RPCs to the server picked from that
list, routes leader-only services to the leader, and retries only what is
safe to retry.

This package is split the usual way:

* a pure core (``server``, ``config``, ``errors``, ``server_list``,
  ``server_lists``, ``rebalance``, ``interval``, ``version_gate``, ``retry``,
  ``convergence``, ``snapshot``) with no asyncio, no etcd and no gRPC. Time comes from an
  injected monotonic clock and randomness from an injected ``random.Random``,
  so every rule is unit-tested with a virtual clock and a seeded generator;
* an async shell (written on top of the core's API) that pings with
  ``grpc.health.v1.Health/Check``, watches membership and election keys in
  etcd, and forwards calls.
"""
