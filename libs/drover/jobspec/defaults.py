"""Nomad's defaults for what a job spec leaves unset (pure).

:func:`canonicalize` is applied once, when a job is registered, so what
GetJob returns (and every version record) is the job as it runs: a reader
never has to know a default. Nomad's ``Canonicalize`` (api/jobs.go,
api/tasks.go, nomad/structs) is the model; drover fills only the fields it
has:

- namespace ``default``, priority 50, type ``service``;
- datacenters ``["*"]`` (every datacenter) when none are named;
- a task group's count 1 when unset (an explicit 0 stays 0: a group
  scaled to nothing);
- for service and system jobs, the update strategy Nomad's
  ``DefaultUpdateStrategy`` gives a group without one, and each unset field
  of a partial block: max_parallel 1, min_healthy_time 10 s,
  healthy_deadline 5 m, progress_deadline 10 m, canary 0, auto_revert and
  auto_promote false (max_parallel set to 0 keeps 0: no rolling update);
  batch jobs have no update strategy in Nomad, so none is added;
- a task's resources: 100 MHz and 300 MB (:mod:`drover.worker.resources`).

Invariant: ``canonicalize(canonicalize(j)) == canonicalize(j)``; a set
field is never changed.
"""

from __future__ import annotations

from google.protobuf.duration_pb2 import Duration

from drover.api.types.v1 import job_pb2
from drover.worker.resources import fill_defaults

DEFAULT_NAMESPACE = "default"
DEFAULT_PRIORITY = 50
DEFAULT_TYPE = job_pb2.JOB_TYPE_SERVICE
DEFAULT_DATACENTERS = ("*",)
DEFAULT_COUNT = 1
DEFAULT_MAX_PARALLEL = 1
DEFAULT_MIN_HEALTHY_TIME_S = 10
DEFAULT_HEALTHY_DEADLINE_S = 5 * 60
DEFAULT_PROGRESS_DEADLINE_S = 10 * 60

#: Job types that roll updates (Nomad: batch jobs take no update block).
UPDATE_TYPES = frozenset({job_pb2.JOB_TYPE_SERVICE, job_pb2.JOB_TYPE_SYSTEM})


def default_update() -> job_pb2.UpdateStrategy:
    """Nomad's ``DefaultUpdateStrategy`` (the fields drover has)."""
    u = job_pb2.UpdateStrategy()
    fill_update(u)
    return u


def fill_update(u: job_pb2.UpdateStrategy) -> None:
    """Each unset field of ``u`` to Nomad's default (canary and the two
    flags default to their zero value, which proto3 already is)."""
    if not u.HasField("max_parallel"):
        u.max_parallel = DEFAULT_MAX_PARALLEL
    for name, seconds in (("min_healthy_time", DEFAULT_MIN_HEALTHY_TIME_S),
                          ("healthy_deadline", DEFAULT_HEALTHY_DEADLINE_S),
                          ("progress_deadline", DEFAULT_PROGRESS_DEADLINE_S)):
        if not u.HasField(name):
            getattr(u, name).CopyFrom(Duration(seconds=seconds))


def canonicalize(job: job_pb2.Job) -> None:
    """Fill in ``job``'s unset fields with Nomad's defaults (module doc), in place."""
    job.namespace = job.namespace or DEFAULT_NAMESPACE
    if job.priority == 0:
        job.priority = DEFAULT_PRIORITY
    if job.type == job_pb2.JOB_TYPE_UNSPECIFIED:
        job.type = DEFAULT_TYPE
    if not job.datacenters:
        job.datacenters.extend(DEFAULT_DATACENTERS)
    for tg in job.task_groups:
        if not tg.HasField("count"):
            tg.count = DEFAULT_COUNT
        if job.type in UPDATE_TYPES:
            fill_update(tg.update)  # also marks an absent block present
    fill_defaults(job)
