"""Which capability every drover RPC requires, and the check (pure).

:data:`TABLE` maps each full method name (``/pkg.Service/Method``) of every
drover service to a :class:`Requirement`; a unit test asserts it covers
every method in the descriptors, so a new RPC cannot ship unguarded (the
interceptor also refuses a drover method missing from the table).

Requirement kinds:

* ``namespace``: a namespace capability in every namespace the request
  names (``fields`` are dotted paths into the request; repeated fields fan
  out; an empty value means ``default``, or all namespaces where the API
  says so);
* ``global``: a level of the ``operator``, ``node`` or ``scheduler`` rule;
* ``management``: a management token (eval delete, scheduler config,
  ACL administration);
* ``server``: the cluster's own server identity only (writes only a leader
  may make; the state service also requires the leader's fence);
* ``topics``: per topic of a Subscribe, as Nomad's event stream
  (:mod:`drover.acl.topics`);
* ``authenticated``: any valid token (GetSelfToken);
* ``none``: anyone (Bootstrap, guarded by its once-only txn).

The server identity satisfies every requirement; management every one but
``server``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from drover.acl.acl import ALL_NAMESPACES, Identity, IdentityKind
from drover.acl.errors import PermissionDenied
from drover.acl.policy import SUBMIT_JOB_IMPLIES, Level
from drover.acl.topics import authorize_topics
from drover.acl.visibility import NamespacePredicate, readable

__all__ = ["TABLE", "Requirement", "authorize", "request_namespaces"]

DEFAULT_NAMESPACE = "default"


@dataclass(frozen=True, slots=True)
class Requirement:
    kind: str  # namespace | global | management | server | topics | authenticated | none
    capability: str = ""
    area: str = ""
    level: Level = Level.NONE
    fields: tuple[str, ...] = ("namespace",)
    empty_is_all: bool = False
    #: A boolean request field that, set, asks for :attr:`flagged` instead
    #: (DeregisterJob's ``purge``: Nomad's ``purge-job``).
    flag: str = ""
    flagged: str = ""

    def capability_for(self, request: Any) -> str:
        """The namespace capability ``request`` asks for."""
        if self.flag and getattr(request, self.flag, False):
            return self.flagged
        return self.capability

    def describe(self, capability: str = "") -> str:
        if self.kind == "namespace":
            cap = capability or self.capability
            if cap in SUBMIT_JOB_IMPLIES:
                return f"namespace capability {cap} (or submit-job)"
            return f"namespace capability {cap}"
        if self.kind == "global":
            return f"{self.area} {self.level.name.lower()}"
        return {"management": "a management token", "server": "the server identity",
                "authenticated": "a valid token",
                "topics": "per topic: read-job, node read or management",
                }.get(self.kind, self.kind)


def ns(capability: str, *fields: str, empty_is_all: bool = False,
       flag: str = "", flagged: str = "") -> Requirement:
    return Requirement("namespace", capability=capability, fields=fields or ("namespace",),
                       empty_is_all=empty_is_all, flag=flag, flagged=flagged)


def glob(area: str, level: Level) -> Requirement:
    return Requirement("global", area=area, level=level)


MANAGEMENT = Requirement("management")
SERVER = Requirement("server")
AUTHENTICATED = Requirement("authenticated")
TOPICS = Requirement("topics")
NONE = Requirement("none")

_S = "/drover.state.v1.StateService/"
_B = "/drover.broker.v1.EvalBrokerService/"
_D = "/drover.deployments.v1.DeploymentWatcherService/"
_P = "/drover.proxy.v1.ClientProxyService/"
_A = "/drover.acl.v1.AclService/"

# Job and deployment writes ask for Nomad's fine-grained capability;
# ``submit-job`` implies every one (:data:`drover.acl.policy.SUBMIT_JOB_IMPLIES`).
TABLE: dict[str, Requirement] = {
    _S + "RegisterJob": ns("register-job", "job.namespace"),
    _S + "GetJob": ns("read-job"),
    _S + "GetJobSnapshot": ns("read-job"),
    _S + "ListJobs": ns("list-jobs"),
    _S + "ListJobVersions": ns("read-job"),
    # Nomad's Job.Deregister: a purge needs purge-job (or submit-job); a
    # stop deregister-job, which purge-job implies
    # (:data:`drover.acl.policy.IMPLIES`).
    _S + "DeregisterJob": ns("deregister-job", flag="purge", flagged="purge-job"),
    _S + "GetEvaluation": ns("read-job", empty_is_all=True),
    _S + "ListEvaluations": ns("read-job"),
    _S + "CountEvaluations": ns("read-job"),
    _S + "DeleteEvaluations": MANAGEMENT,
    # Creating evaluations asks for scheduling; writing an outcome also
    # needs the fence and the server identity (checked by the state service).
    _S + "UpsertEvaluations": ns("evaluate-job", "evaluations.namespace"),
    _S + "GetDeployment": ns("read-job"),
    _S + "ListDeployments": ns("read-job"),
    _S + "UpdateDeployment": SERVER,
    _S + "GetAllocation": ns("read-job"),
    _S + "ListAllocations": ns("read-job"),
    # Allocations are placed through SubmitPlan (its per-node room check and
    # delivery check); writing them directly is an operator's override.
    _S + "UpsertAllocations": MANAGEMENT,
    _S + "UpdateAllocations": glob("node", Level.WRITE),  # client status reports
    _S + "UpsertNode": glob("node", Level.WRITE),
    _S + "GetNode": glob("node", Level.READ),
    _S + "ListNodes": glob("node", Level.READ),
    _S + "GetSchedulerConfig": glob("operator", Level.READ),
    _S + "SetSchedulerConfig": MANAGEMENT,
    _S + "Subscribe": TOPICS,
    # The broker's outcomes and follow-ups (leader only: fenced).
    _S + "UpdateEvaluations": SERVER,
    # The deployment watcher leader's collection pass (fenced).
    _S + "GarbageCollect": SERVER,
    # A scheduler worker's plan (Nomad: the plan applier's scheduler rule).
    _S + "SubmitPlan": glob("scheduler", Level.WRITE),
    _S + "UpdateNodeStatus": glob("node", Level.WRITE),
    # The broker leader marks nodes whose heartbeat lease expired down (fenced).
    _S + "ReapMissedHeartbeats": SERVER,
    # Many nodes' heartbeats in one call (a client process running many nodes).
    _S + "HeartbeatNodes": glob("node", Level.WRITE),
    # Start or cancel a drain (Nomad: node write); its completion is the
    # drainer's (fenced, server identity checked by the state service).
    _S + "UpdateNodeDrain": glob("node", Level.WRITE),
    # The node drainer's migrate marks (deployment watcher leader: fenced).
    _S + "UpdateAllocDesiredTransition": SERVER,
    # `nomad job start` registers the job again: register-job.
    _S + "StartJob": ns("register-job"),
    _S + "RevertJob": ns("revert-job"),
    # Nomad: scale-job (the `scale` and `write` policies grant it).
    _S + "ScaleJob": ns("scale-job"),
    # Nomad: alloc-lifecycle (the `write` policy grants it).
    _S + "StopAllocation": ns("alloc-lifecycle"),
    _S + "PlanJob": ns("plan-job", "job.namespace"),
    _B + "Dequeue": glob("scheduler", Level.WRITE),
    _B + "Ack": glob("scheduler", Level.WRITE),
    _B + "AckBatch": glob("scheduler", Level.WRITE),
    _B + "Nack": glob("scheduler", Level.WRITE),
    _B + "OutstandingReset": glob("scheduler", Level.WRITE),
    _B + "GetBrokerStats": glob("operator", Level.READ),
    _B + "ListQueue": glob("operator", Level.READ),
    _B + "CancelEvaluation": glob("operator", Level.WRITE),
    _D + "PromoteDeployment": ns("promote-deployment"),
    _D + "PauseDeployment": ns("pause-deployment"),
    _D + "FailDeployment": ns("fail-deployment"),
    _D + "SetAllocHealth": ns("set-alloc-health-deployment"),
    _D + "GetWatcherStats": glob("operator", Level.READ),
    # `drover system gc` (Nomad: management).
    _D + "CollectGarbage": MANAGEMENT,
    _P + "ListServers": glob("operator", Level.READ),
    _P + "RebalanceServers": glob("operator", Level.WRITE),
    _P + "WaitForConvergence": glob("operator", Level.READ),
    _A + "Bootstrap": NONE,
    _A + "ApplyPolicy": MANAGEMENT,
    _A + "ListPolicies": MANAGEMENT,
    _A + "DeletePolicy": MANAGEMENT,
    _A + "CreateToken": MANAGEMENT,
    _A + "ListTokens": MANAGEMENT,
    _A + "RevokeToken": MANAGEMENT,
    _A + "GetSelfToken": AUTHENTICATED,
}


def _values(msg: Any, path: list[str]) -> Iterator[str]:
    if not hasattr(msg, "DESCRIPTOR"):
        return  # an undecodable request: judged as naming none; validation refuses it
    name, rest = path[0], path[1:]
    field = msg.DESCRIPTOR.fields_by_name[name]
    value = getattr(msg, name)
    items = list(value) if field.is_repeated else [value]
    for item in items:
        if rest:
            yield from _values(item, rest)
        else:
            yield str(item)


def request_namespaces(req: Requirement, request: Any) -> set[str]:
    """Every namespace a request names under ``req``'s fields."""
    out: set[str] = set()
    for path in req.fields:
        for value in _values(request, path.split(".")):
            out.add(value or (ALL_NAMESPACES if req.empty_is_all else DEFAULT_NAMESPACE))
    # A request naming none (an empty list) is judged as one for the default
    # namespace: validation may refuse it later, but never for a caller
    # who could not make it at all.
    return out or {DEFAULT_NAMESPACE}


def authorize(identity: Identity, req: Requirement, request: Any, method: str, *,
              narrow: bool = False) -> NamespacePredicate | None:
    """Return if ``identity`` may make this call; else :class:`PermissionDenied`.

    With ``narrow`` (the call is a read), a request for every namespace
    (``*``) by a token holding the capability in only some is allowed, and
    the namespaces it may see are returned (:mod:`drover.acl.visibility`);
    None means the call sees everything it names."""
    kind = identity.kind
    if req.kind == "none" or kind is IdentityKind.SERVER:
        return None
    if req.kind == "authenticated":
        if kind is not IdentityKind.ANONYMOUS:
            return None
    elif req.kind == "server":
        pass
    elif kind is IdentityKind.MANAGEMENT:
        return None
    elif req.kind == "topics":
        authorize_topics(identity, request, method)
        return None
    elif req.kind == "global":
        if identity.acl.allow_global(req.area, req.level):
            return None
    elif req.kind == "namespace":
        cap = req.capability_for(request)
        denied = sorted(n for n in request_namespaces(req, request)
                        if not identity.acl.allow_namespace(n, cap))
        if not denied:
            return None
        seen = readable(identity.acl, cap) if narrow else None
        if denied == [ALL_NAMESPACES] and seen is not None:
            return seen
        raise PermissionDenied(
            f"{method.rsplit('/', 1)[-1]} needs {req.describe(cap)} in namespace "
            f"{denied[0][:80]!r}; {identity.describe} lacks it",
            metadata={"capability": cap, "namespace": denied[0][:128]})
    raise PermissionDenied(
        f"{method.rsplit('/', 1)[-1]} needs {req.describe()}; {identity.describe} lacks it",
        metadata={"capability": req.describe()})
