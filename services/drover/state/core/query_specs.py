"""Every read RPC of the StateService as one row of a table (pure: no I/O).

A row (:class:`Query`) says what a Get, List or Count reads and how: the
kind whose table index answers the query (and which a blocking query waits
on), how the request names a namespace (:class:`Scope`), the response
message and the field that carries the answer, and the noun a NOT_FOUND
names. What differs between kinds is a small named hook, not a handler:

* ``find`` -- how a Get finds its answer (:func:`by_key` for most kinds;
  :func:`job_or_version` for GetJob's ``version``, :func:`in_any_namespace`
  for GetEvaluation, :func:`job_versions` for ListJobVersions,
  :func:`find_snapshot` for GetJobSnapshot,
  :func:`scheduler_config`, which is never missing);
* ``missing`` -- the NOT_FOUND message (:func:`not_found`, or
  :func:`job_not_found`, which names the version asked for);
* ``extra`` -- further response fields (:func:`related_evaluations`: the
  evaluation chain GetEvaluation's ``include_related`` asks for);
* ``scoped_by`` -- request fields that, when set, restrict a Count to the
  objects whose record field of the same name equals them (CountEvaluations'
  ``job_id``, so a count and the delete it announces select the same set).

How a request is read is here too, pure: :func:`lookup` (a Get's names,
validated in the row's order), :func:`listed_namespace`, :func:`count_scope`.
The shell (:mod:`drover.state.queries`) turns each row into the servicer's
method of that name, so a new kind, or a new read of a kind, is one row.
The hooks read the cache tables through :class:`TablesView` (the operations
used, nothing more), so they run on plain :class:`drover.state.core.tables.Tables`
in unit tests.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import scheduler_pb2
from drover.state.core import codec
from drover.state.core.table_views import TablesView
from drover.state.core.validate import ALL_NAMESPACES, check_name, namespace_arg
from drover.state.jobs.core.job_snapshot import job_snapshot


class Verb(enum.Enum):
    GET = "get"  # one answer (object, list of versions, config) or NOT_FOUND
    LIST = "list"  # one page of a kind: prefix, filter, order, page size/token
    COUNT = "count"  # how many objects a filter matches


class Scope(enum.Enum):
    """How a request's ``namespace`` is read (empty always means "default",
    except for :attr:`ANY`)."""

    #: One namespace; ``"*"`` is refused. NOT_FOUND names the namespace.
    ONE = "one"
    #: One namespace, or every one when empty or ``"*"`` (an id unique
    #: across namespaces: evaluations). NOT_FOUND names no namespace.
    ANY = "any"
    #: A List or Count: one namespace, or every one with ``"*"``.
    LISTED = "listed"
    #: The kind has no namespace (nodes, the scheduler config); the request
    #: has no namespace field.
    GLOBAL = "global"


@dataclass(frozen=True)
class Lookup:
    """A validated Get request: the namespace to read (``codec.GLOBAL_NS``
    for a kind without one; None: every namespace, :attr:`Scope.ANY` only),
    the id (empty when the request names none) and the request itself."""

    namespace: str | None
    id: str
    request: Any


Finder = Callable[[TablesView, "Query", Lookup], Any | None]
Missing = Callable[["Query", Lookup], str]
Extra = Callable[[TablesView, Lookup, Any], Mapping[str, Any]]


def by_key(tables: TablesView, query: Query, lookup: Lookup) -> Any | None:
    """The object ``<namespace>/<id>`` of the query's kind."""
    return tables[query.kind].decode(f"{lookup.namespace}/{lookup.id}")


def job_or_version(tables: TablesView, query: Query, lookup: Lookup) -> Any | None:
    """The job, or with ``version`` set that version's immutable record."""
    if lookup.request.HasField("version"):
        nsid = f"{lookup.namespace}/{lookup.id}/{lookup.request.version:020d}"
        return tables[codec.JOB_VERSIONS].decode(nsid)
    return by_key(tables, query, lookup)


def in_any_namespace(tables: TablesView, query: Query, lookup: Lookup) -> Any | None:
    """The object with this id in the given namespace, or in the first
    namespace that holds one when none is given."""
    table = tables[query.kind]
    spaces = [lookup.namespace] if lookup.namespace is not None else table.namespaces()
    for ns in spaces:
        found = table.decode(f"{ns}/{lookup.id}")
        if found is not None:
            return found
    return None


def versions_of(tables: TablesView, ns: str | None, job_id: str) -> list[Any]:
    """Every stored version of the job, newest first."""
    table = tables[codec.JOB_VERSIONS]
    orders = table.candidates("job", f"{ns}/{job_id}").iterate(None, True)
    versions = [v for v in (table.decode(o.id) for o in orders) if v is not None]
    versions.sort(key=lambda j: j.version, reverse=True)
    return versions


def job_versions(tables: TablesView, query: Query, lookup: Lookup) -> list[Any] | None:
    """Every stored version of the job, newest first; None if it has none."""
    return versions_of(tables, lookup.namespace, lookup.id) or None


def find_snapshot(tables: TablesView, query: Query, lookup: Lookup) -> Any:
    """GetJobSnapshot's hook (:mod:`.job_snapshot`): never missing, as no
    job is an answer too."""
    assert lookup.namespace is not None
    return job_snapshot(tables, lookup.namespace, lookup.id,
                        versions_of(tables, lookup.namespace, lookup.id),
                        modified_after=lookup.request.allocations_modified_after)


def scheduler_config(tables: TablesView, query: Query, lookup: Lookup) -> Any:
    """The cluster's scheduler config; the defaults until one is written."""
    found = tables[query.kind].decode(f"{codec.GLOBAL_NS}/{codec.SCHEDULER_CONFIG_ID}")
    return scheduler_pb2.SchedulerConfig() if found is None else found


def not_found(query: Query, lookup: Lookup) -> str:
    where = f" in namespace {lookup.namespace!r}" if query.scope is Scope.ONE else ""
    return f"{query.what} {lookup.id!r} not found{where}"


def job_not_found(query: Query, lookup: Lookup) -> str:
    if lookup.request.HasField("version"):
        return f"{not_found(query, lookup)} at version {lookup.request.version}"
    return not_found(query, lookup)


#: How many of a job's evaluations a related-chain walk reads at most.
RELATED_SCAN = 1000


def related_evaluations(tables: TablesView, lookup: Lookup, ev: Any) -> Mapping[str, Any]:
    """With ``include_related``: every evaluation linked to ``ev`` through
    previous/next/blocked links, in either direction and transitively (Nomad
    walks the whole chain), oldest first. Chains stay within one job, so the
    walk reads only that job's evaluations (at most RELATED_SCAN of them)."""
    if not lookup.request.include_related:
        return {}
    table = tables[codec.EVALUATIONS]
    prefix = ev.namespace + "/"
    links: dict[str, set[str]] = {}
    evs: dict[str, Any] = {}
    for n, order in enumerate(table.candidates("job_id", ev.job_id).iterate(None, False)):
        if n >= RELATED_SCAN:
            break
        other = table.decode(order.id) if order.id.startswith(prefix) else None
        if other is None:
            continue
        evs[other.id] = other
        for rid in (other.previous_eval, other.next_eval, other.blocked_eval):
            if rid:
                links.setdefault(other.id, set()).add(rid)
                links.setdefault(rid, set()).add(other.id)
    seen, todo = {ev.id}, [ev.id]
    while todo:
        for rid in links.get(todo.pop(), ()):
            if rid not in seen:
                seen.add(rid)
                todo.append(rid)
    chain = [evs[i] for i in seen if i != ev.id and i in evs]
    return {"related": sorted(chain, key=lambda e: (e.create_index, e.id))}


@dataclass(frozen=True)
class Query:
    """One read RPC.

    ``kind`` is the table whose index the answer reflects and a blocking
    query waits on (GetJob's ``version`` reads the versions table but waits
    on the jobs table: every version is written with its job, one txn).
    ``response`` is the response message class, ``field`` the field that
    carries the answer, ``what`` the noun of a NOT_FOUND. ``names`` are the
    request fields that name the object (``"namespace"`` read per ``scope``,
    any other checked as an id), validated in this order before the query
    reads or blocks. A LIST or COUNT takes its paging,
    filter and namespace fields from the request by their usual names.
    """

    rpc: str
    verb: Verb
    kind: str
    response: Any
    field: str
    scope: Scope
    what: str = ""
    names: tuple[str, ...] = ()
    find: Finder = by_key
    missing: Missing = not_found
    extra: Extra | None = None
    scoped_by: tuple[str, ...] = ()


# -- reading a request (before the read blocks: bad input never waits) ------

def _namespace(scope: Scope, value: str) -> str | None:
    if scope is Scope.ONE:
        return namespace_arg(value, allow_all=False)
    if scope is Scope.ANY:
        return None if value in ("", ALL_NAMESPACES) else check_name(value, "namespace")
    if scope is Scope.LISTED:
        ns = namespace_arg(value)
        return None if ns == ALL_NAMESPACES else ns
    return codec.GLOBAL_NS


def lookup(query: Query, request: Any) -> Lookup:
    """A Get's validated names, checked in the row's order (INVALID_ARGUMENT
    naming the field)."""
    ns = _namespace(query.scope, "")
    for name in query.names:
        if name == "namespace":
            ns = _namespace(query.scope, request.namespace)
        else:
            check_name(getattr(request, name), name)
    return Lookup(ns, request.id if "id" in query.names else "", request)


def listed_namespace(query: Query, request: Any) -> str | None:
    """A List's or Count's namespace for the paginator: None means every one
    (``"*"``, or a kind without namespaces)."""
    return None if query.scope is Scope.GLOBAL else _namespace(query.scope, request.namespace)


def count_scope(query: Query, request: Any) -> dict[str, str] | None:
    """A Count's restrictions from its ``scoped_by`` fields that are set."""
    scope = {f: check_name(getattr(request, f), f) for f in query.scoped_by if getattr(request, f)}
    return scope or None


def _get(rpc: str, kind: str, field: str, what: str, scope: Scope = Scope.ONE,
         names: tuple[str, ...] | None = None, **hooks: Any) -> Query:  # fmt: skip
    if names is None:
        names = ("namespace", "id") if scope is Scope.ONE else ("id",)
    return Query(rpc, Verb.GET, kind, getattr(state_pb2, f"{rpc}Response"), field, scope,
                 what, names, **hooks)


def _list(rpc: str, kind: str, field: str, scope: Scope = Scope.LISTED) -> Query:
    return Query(rpc, Verb.LIST, kind, getattr(state_pb2, f"{rpc}Response"), field, scope)


#: The table: one row per Get/List/Count RPC of the StateService.
QUERIES: tuple[Query, ...] = (
    _get("GetJob", codec.JOBS, "job", "job", find=job_or_version, missing=job_not_found),
    _list("ListJobs", codec.JOBS, "jobs"),
    # A Get in all but name: one job's versions, whole, no paging.
    _get("ListJobVersions", codec.JOB_VERSIONS, "versions", "job", find=job_versions),
    # A scheduler's reads of one job at one revision; no job is an answer too.
    _get("GetJobSnapshot", codec.JOBS, "snapshot", "job", find=find_snapshot),
    # Evaluation ids are unique across namespaces: any namespace may hold it.
    _get("GetEvaluation", codec.EVALUATIONS, "evaluation", "evaluation", Scope.ANY,
         names=("id", "namespace"), find=in_any_namespace, extra=related_evaluations),
    _list("ListEvaluations", codec.EVALUATIONS, "evaluations"),
    Query("CountEvaluations", Verb.COUNT, codec.EVALUATIONS, state_pb2.CountEvaluationsResponse,
          "count", Scope.LISTED, scoped_by=("job_id",)),
    _get("GetDeployment", codec.DEPLOYMENTS, "deployment", "deployment"),
    _list("ListDeployments", codec.DEPLOYMENTS, "deployments"),
    _get("GetAllocation", codec.ALLOCATIONS, "allocation", "allocation"),
    _list("ListAllocations", codec.ALLOCATIONS, "allocations"),
    _get("GetNode", codec.NODES, "node", "node", Scope.GLOBAL),
    _list("ListNodes", codec.NODES, "nodes", Scope.GLOBAL),
    _get("GetSchedulerConfig", codec.SCHEDULER_CONFIG, "config", "scheduler config",
         Scope.GLOBAL, names=(), find=scheduler_config),
)  # fmt: skip

BY_RPC: Mapping[str, Query] = {q.rpc: q for q in QUERIES}
