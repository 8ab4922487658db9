"""The jobs family: jobs and their versions.

Reads: GetJob, ListJobs, ListJobVersions, GetJobSnapshot (rows of
:data:`drover.state.core.query_specs.QUERIES`, answered by
:mod:`drover.state.queries`; the snapshot is :mod:`.core.job_snapshot`).
Writes: :mod:`.rpcs` (RegisterJob, DeregisterJob with its purge, StartJob,
RevertJob, ScaleJob, PlanJob's dry run, and an operator's StopAllocation),
planned by :mod:`.core.register` (and :mod:`.core.job_plan`,
:mod:`.core.purge`, :mod:`drover.state.allocations.core.alloc_stop`).
Every write of any family is followed by the job versions it retires
(:mod:`.core.job_versions`) and the job statuses and summaries it changes
(:mod:`.core.job_status`, :mod:`.core.job_summary`): the write pipeline
(:mod:`drover.state.pipeline`) calls them. System jobs' evaluations when a
node can take work: :mod:`.core.system_jobs`.
"""
