"""Unique id prefixes, as Nomad's CLI takes them: ``deployment status 7f99``.

An id given on the command line is used as is when it exists; otherwise the
objects whose id starts with it are listed (a page of a few), and exactly
one match is taken. Several matches are an error that lists them; none
leaves the id as given, so the call's own NOT_FOUND explains.
"""

from __future__ import annotations

from collections.abc import Sequence

import grpc

from drover.api.state.v1 import state_pb2, state_pb2_grpc
from drover.cli._client import CommandFailed

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
    return err.code() == grpc.StatusCode.UNIMPLEMENTED


async def deployment_id(ch: grpc.aio.Channel, namespace: str, given: str,
                        call_timeout: float) -> str:
    try:
        resp = await state_pb2_grpc.StateServiceStub(ch).ListDeployments(
            state_pb2.ListDeploymentsRequest(namespace=namespace, prefix=given,
                                             page_size=SHOWN + 1), timeout=call_timeout)
    except grpc.aio.AioRpcError as err:
        if _no_state_service(err):
            return given
        raise
    return unique(given, [d.id for d in resp.deployments], "deployment")


async def evaluation_id(ch: grpc.aio.Channel, namespace: str, given: str,
                        call_timeout: float) -> str:
    try:
        resp = await state_pb2_grpc.StateServiceStub(ch).ListEvaluations(
            state_pb2.ListEvaluationsRequest(namespace=namespace, prefix=given,
                                             page_size=SHOWN + 1), timeout=call_timeout)
    except grpc.aio.AioRpcError as err:
        if _no_state_service(err):
            return given
        raise
    return unique(given, [e.id for e in resp.evaluations], "evaluation")
