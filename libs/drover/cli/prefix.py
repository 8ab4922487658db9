"""Unique id prefixes, as Nomad's CLI takes them: ``deployment status 7f99``.

An id given on the command line is used as is when it exists; otherwise the
objects whose id starts with it are listed (a page of a few), and exactly
one match is taken. Several matches are an error that lists them; none
leaves the id as given, so the call's own NOT_FOUND explains.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import grpc

from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.cli.client import ClientOptions, CommandFailed, run
from drover.rpc.remote import remote_status

T = TypeVar("T")

#: How many matches an ambiguous prefix shows.
SHOWN = 5


def unique(given: str, matches: Sequence[str], what: str) -> str:
    """The one id ``given`` names among ``matches`` (ids starting with it)."""
    if given in matches or not matches:
        return given
    if len(matches) == 1:
        return matches[0]
    listed = ", ".join(matches[:SHOWN]) + (", ..." if len(matches) > SHOWN else "")
    raise CommandFailed(f"{what} id prefix {given!r} matches several: {listed}; "
                        "give more characters")


def _no_state_service(err: grpc.aio.AioRpcError) -> bool:
    # --address names one service (the broker, say) that does not serve the
    # state API: no prefix lookup then, the id is used as given.
    return remote_status(err).code == "UNIMPLEMENTED"


async def _matches(ch: grpc.aio.Channel, kind: str, namespace: str | None, given: str,
                   call_timeout: float) -> list[str] | None:
    """Ids of ``kind`` starting with ``given`` (None: no state API behind ``ch``)."""
    method, request, field = _LISTS[kind]
    req = request(prefix=given, page_size=SHOWN + 1)
    if namespace is not None:
        req.namespace = namespace
    try:
        resp = await getattr(state_pb2_grpc.StateServiceStub(ch), method)(
            req, timeout=call_timeout)
    except grpc.aio.AioRpcError as err:
        if _no_state_service(err):
            return None
        raise
    return [o.id for o in getattr(resp, field)]


#: kind -> (List method, its request, the response's repeated field).
_LISTS: dict[str, tuple[str, type, str]] = {
    "deployment": ("ListDeployments", state_pb2.ListDeploymentsRequest, "deployments"),
    "evaluation": ("ListEvaluations", state_pb2.ListEvaluationsRequest, "evaluations"),
    "allocation": ("ListAllocations", state_pb2.ListAllocationsRequest, "allocations"),
    "job": ("ListJobs", state_pb2.ListJobsRequest, "jobs"),
    "node": ("ListNodes", state_pb2.ListNodesRequest, "nodes"),  # nodes have no namespace
}


async def resolve(ch: grpc.aio.Channel, kind: str, namespace: str | None, given: str,
                  call_timeout: float) -> str:
    """The full id of the one ``kind`` whose id ``given`` is or begins."""
    matches = await _matches(ch, kind, namespace, given, call_timeout)
    return given if matches is None else unique(given, matches, kind)


async def deployment_id(ch: grpc.aio.Channel, namespace: str, given: str,
                        call_timeout: float) -> str:
    return await resolve(ch, "deployment", namespace, given, call_timeout)


async def evaluation_id(ch: grpc.aio.Channel, namespace: str, given: str,
                        call_timeout: float) -> str:
    return await resolve(ch, "evaluation", namespace, given, call_timeout)


async def token_accessor(ch: grpc.aio.Channel, given: str, call_timeout: float) -> str:
    """The full accessor id of the one ACL token whose accessor ``given`` is
    or begins (ListTokens takes no prefix: tokens are few, all are listed)."""
    from drover.api.acl.v1 import acl_pb2, acl_pb2_grpc

    resp = await acl_pb2_grpc.AclServiceStub(ch).ListTokens(acl_pb2.ListTokensRequest(),
                                                            timeout=call_timeout)
    matches = [t.accessor_id for t in resp.tokens if t.accessor_id.startswith(given)]
    return unique(given, matches, "token accessor")


def call(opts: ClientOptions, kind: str, namespace: str | None, given: str,
         then: Callable[[grpc.aio.Channel, str], Awaitable[T]]) -> T:
    """A command's calls about one object: ``then(channel, full_id)`` once
    ``given`` (its id or a unique prefix of one) is resolved."""

    async def body(ch: grpc.aio.Channel) -> T:
        return await then(ch, await resolve(ch, kind, namespace, given, opts.timeout))

    return run(opts, body)
