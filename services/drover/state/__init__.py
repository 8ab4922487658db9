"""The state service: drover's memory, and the only writer of objects.

Objects (jobs, job versions, evaluations, deployments, allocations, nodes,
scheduler config) live in etcd at ``<root>/v1/<kind>/<namespace>/<id>`` as
serialized protos; etcd's create/mod revisions are their create/modify
indexes. Every replica keeps a watch-fed cache (:mod:`.cache`) and serves
reads from it; writes are etcd transactions (:mod:`.pipeline`) compared on
mod_revision and, for leader writers, on the ``drover-fence``. Any number of
replicas serve at once: etcd orders the writes, and a consistent read waits
until the replica's cache has reached the current etcd revision.

Shape (the skeleton every service shares): :mod:`.app` wires the service
(the only place its config is built), :mod:`.config` holds every config,
:mod:`.errors` every error, :mod:`.servicer` is the only module that sees a
gRPC context (one line per RPC), :mod:`.core` the pure parts every family
shares (codec, cache tables, views, rules, validation, the read table).
Then one package per family the service stores, each with its shell
modules and its pure ``core/``: :mod:`.jobs`, :mod:`.evaluations`,
:mod:`.allocations` (and plans), :mod:`.nodes`, :mod:`.deployments`,
:mod:`.scheduler_config`, :mod:`.acl`. Shared shell: the cache
(:mod:`.cache`), the one write pipeline (:mod:`.pipeline`: the call's
clock and fence, the retry policy, the commit), reads (:mod:`.queries`,
:mod:`.reads`, :mod:`.blocking`), Subscribe (:mod:`.subscribe`) and
garbage collection (:mod:`.gc`, :mod:`.reaper`).

Where each RPC is (every Get/List/Count: a row of
:data:`.core.query_specs.QUERIES`, answered by :mod:`.queries`):

=============================  ===========================================
RegisterJob, DeregisterJob,    :mod:`.jobs.rpcs`; planned by
StartJob, RevertJob, ScaleJob  :mod:`.jobs.core.register` (purge:
                               :mod:`.jobs.core.purge`)
PlanJob                        :mod:`.jobs.rpcs`; :mod:`.jobs.core.job_plan`
StopAllocation                 :mod:`.jobs.rpcs`;
                               :mod:`.allocations.core.alloc_stop`
GetJob, ListJobs,              :mod:`.queries`; the snapshot:
ListJobVersions, GetJobSnapshot :mod:`.jobs.core.job_snapshot`
UpsertEvaluations,             :mod:`.evaluations.rpcs`; planned by
UpdateEvaluations,             :mod:`.evaluations.core.evals`
DeleteEvaluations              (by filter: :mod:`.evaluations.delete_by_filter`)
GetEvaluation, ListEvaluations, :mod:`.queries`
CountEvaluations
UpsertAllocations,             :mod:`.allocations.rpcs`; planned by
UpdateAllocations              :mod:`.allocations.core.allocs`
GetAllocation, ListAllocations :mod:`.queries`
SubmitPlan                     :mod:`.allocations.plans`; planned by
                               :mod:`.allocations.core.placement`
UpsertNode                     :mod:`.nodes.rpcs`; :mod:`.nodes.core.nodes`
UpdateNodeStatus,              :mod:`.nodes.status`; :mod:`.nodes.core.nodes`,
HeartbeatNodes,                :mod:`.nodes.liveness`,
ReapMissedHeartbeats           :mod:`.nodes.core.liveness`
UpdateNodeDrain,               :mod:`.nodes.drain`; :mod:`.nodes.core.drain`
UpdateAllocDesiredTransition
GetNode, ListNodes             :mod:`.queries`
UpdateDeployment               :mod:`.deployments.rpcs`; planned by
                               :mod:`.deployments.core.deployment`
GetDeployment, ListDeployments :mod:`.queries`
SetSchedulerConfig             :mod:`.scheduler_config.rpcs`;
                               :mod:`.scheduler_config.core.config`
GetSchedulerConfig             :mod:`.queries`
GarbageCollect                 :mod:`.gc` (rules: :mod:`.core.gc_rules`)
Subscribe                      :mod:`.subscribe`
AclService (all eight)         :mod:`.acl.admin`; :mod:`.acl.core.acl`
=============================  ===========================================

Where is it:

- **A plan is applied** in :func:`.allocations.core.placement.plan_submit`
  (one txn, partial commit by node), called by :mod:`.allocations.plans`.
- **A node is marked down** (the state side) in
  :func:`.nodes.core.liveness.plan_reap` (missed heartbeats: its lease
  expired); its allocations are marked lost there too
  (:func:`.nodes.core.nodes.mark_lost`). An explicit UpdateNodeStatus to
  down is :func:`.nodes.core.nodes.plan_node_status`.
- **A deployment's promotion is written** in
  :mod:`.deployments.core.deployment` (UpdateDeployment's planner: the
  promoted groups and their canaries, one txn); the watcher that decides
  it is the deployments service.
- **An evaluation is delivered** by the broker, not here
  (:mod:`drover.broker.core.delivery`); the state only checks the token a
  plan carries (:mod:`.allocations.eval_token`).

Entry point for the server bootstrap: :func:`drover.state.app.create_app`.
"""
