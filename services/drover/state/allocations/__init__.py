"""The allocations family, and plans (which write allocations).

Reads: GetAllocation, ListAllocations (rows of
:data:`drover.state.core.query_specs.QUERIES`). Writes: :mod:`.rpcs`
(UpsertAllocations, UpdateAllocations: clients' reports, planned by
:mod:`.core.allocs`, :mod:`.core.client_reports`, :mod:`.core.alloc_failure`)
and :mod:`.plans` (SubmitPlan: Nomad's plan applier, planned by
:mod:`.core.placement` with the per-node room check of :mod:`.core.usage`;
the plan's eval token checked with the broker by :mod:`.eval_token`, its
rules :mod:`.core.eval_token`). An operator's alloc stop is planned by
:mod:`.core.alloc_stop` (called from :mod:`drover.state.jobs.rpcs`).
"""
