"""The deployment watcher: steers active deployments to success or failure.

Modelled on Nomad's ``deploymentwatcher`` package (a manager, one watcher per
deployment, an evaluation batcher), with every piece of I/O split out.

Layout:

- :mod:`.core` is the *pure core*: plain classes and functions, no asyncio,
  no etcd, no gRPC (tests/unit/test_architecture.py holds every module under
  it to that). It takes decisions and hands them back as frozen dataclasses
  (:mod:`.core.effects`) for the shell to write.
- The modules at the top are the *shell*, async and I/O: the wiring
  (``app``), the thin servicer, the leader (only the elected replica runs it:
  it feeds the core the two state subscriptions, deployments and
  allocations, writes the effects with the leader fence, and sleeps until
  :meth:`~.core.manager.WatcherManager.next_wakeup`), garbage collection,
  the client of the state service (``state_api``), metrics and errors.

Time: every time in the core is **wall-clock epoch seconds as a float** (what
``time.time()`` returns), because progress deadlines are stored in the
deployment as a ``google.protobuf.Timestamp`` and must mean the same thing on
every replica after a failover. The manager takes a ``Callable[[], float]``
returning such seconds; the pure functions take ``now`` explicitly, so tests
drive everything with a virtual clock.
"""
