"""The state service's pure core: validation, the rules a write must
respect, and planners that turn a request and a read-only :class:`View` of
the cache into a :class:`WritePlan` (compares + ops + the events it will
produce + the response it answers with).

No asyncio, no grpc, no etcd client (tests/unit/test_architecture.py holds
it to that): the shell (:mod:`drover.state.pipeline`) reads the view,
commits the plan through :class:`drover.state.pipeline.Writer` and, on a
conflict, syncs the cache and plans again. Planners are plain functions of
``(view, context, request data)``; the clock and id source come in the
:class:`WriteContext`, so every plan is reproducible in a unit test.

Beside the planners, every other pure part of the service lives here: the
object codec and key layout (:mod:`.codec`), the cache's tables, their
entries and records (:mod:`.tables`, :mod:`.entries`, :mod:`.records`,
:mod:`.cache_view`), the read RPCs as a table (:mod:`.query_specs`), what
garbage collection may remove (:mod:`.gc_rules`) and the windows the
initial list pages etcd in (:mod:`.windows`).
"""
