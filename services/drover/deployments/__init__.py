"""The deployment watcher: steers active deployments to success or failure.

Modelled on Nomad's ``deploymentwatcher`` package (a manager, one watcher per
deployment, an evaluation batcher), with every piece of I/O split out. The
modules here are the *pure core*: plain classes and functions, no asyncio, no
etcd, no gRPC. They take decisions and hand them back as frozen dataclasses
(:mod:`.effects`); an async shell (leader only) feeds them the two state
subscriptions (deployments, allocations), writes the effects with the leader
fence, and sleeps until :meth:`WatcherManager.next_wakeup`.

Time: every time here is **wall-clock epoch seconds as a float** (what
``time.time()`` returns), because progress deadlines are stored in the
deployment as a ``google.protobuf.Timestamp`` and must mean the same thing on
every replica after a failover. The manager takes a ``Callable[[], float]``
returning such seconds; the pure functions take ``now`` explicitly, so tests
drive everything with a virtual clock.

Modules, one concept each:

- :mod:`.errors`: the errors of the manual operations.
- :mod:`.effects`: what the core asks the shell to write.
- :mod:`.accounting`: per task group counts from allocations.
- :mod:`.deadline`: the progress-deadline rule, in one function.
- :mod:`.revert`: the auto-revert target, from the job version history.
- :mod:`.router`: allocation changes → the one watcher that owns them.
- :mod:`.batcher`: follow-up evaluations coalesced and batched.
- :mod:`.watcher`: one deployment's decisions, automatic and manual.
- :mod:`.manager`: all watchers of the leader, plus stats.
"""
