"""What the forwarder does after a failed attempt: try elsewhere, follow a
leader hint, or answer the client (and with what).

The policy itself is :func:`drover.proxy.core.retry.decide_retry` (pure); this
module applies it to one attempt: it reports the server to its list,
follows a hint unless it names a deposed leader, and turns a write that may
have been applied into UNAVAILABLE ``OUTCOME_UNKNOWN`` and an attempt the
hold ended into ``SERVER_STALLED``. The retry loop reads the outcome from
the exception raised: :class:`Retry` (with ``follow`` for a hint, tried at
once) or :class:`Final`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import NoReturn, TypeAlias

import grpc
from tenacity import RetryCallState

from drover.errors import DroverError
from drover.proxy.core.failure import classify
from drover.proxy.core.retry import (
    OUTCOME_UNKNOWN_KINDS,
    CallFailure,
    FailureKind,
    RetryAction,
    RetryDecision,
    decide_retry,
)
from drover.proxy.core.server import Server
from drover.proxy.core.server_list import ServerList
from drover.proxy.errors import Final, ForwardOutcomeUnknown, Retry, ServerStalled
from drover.rpc.hold import AttemptEnded
from drover.rpc.reads import is_read
from drover.rpc.remote import remote_status

log = logging.getLogger(__name__)

#: What an attempt at a server can end in.
Error: TypeAlias = grpc.aio.AioRpcError | DroverError

#: Backoff before trying the next server; a followed leader hint is tried at once.
RETRY_BACKOFF_BASE = 0.01
RETRY_BACKOFF_MAX = 0.2


def backoff(state: RetryCallState) -> float:
    """tenacity ``wait``: nothing before a followed hint, else doubling from 10 ms."""
    outcome = state.outcome
    exc = outcome.exception() if outcome is not None else None
    if isinstance(exc, Retry) and exc.follow:
        return 0.0
    return min(RETRY_BACKOFF_MAX, RETRY_BACKOFF_BASE * 2 ** (state.attempt_number - 1))


def report(
    path: str, lst: ServerList, server: Server, err: grpc.aio.AioRpcError | None, *,
    relayed: bool, failure: CallFailure | None = None,
) -> tuple[CallFailure, RetryDecision]:
    """Classify a failed attempt, decide, and report the server if it failed."""
    if failure is None:
        assert err is not None
        failure = classify(remote_status(err), server=server.address, relayed=relayed)
    decision = decide_retry(path, failure)
    if decision.server_failed:
        lst.notify_failed(server)
    log.debug(
        "%s via %s failed (%s): %s -> %s",
        path, server.address, failure.kind.value, decision.reason, decision.action.value,
    )
    return failure, decision


def next_step(
    path: str, lst: ServerList, server: Server, err: grpc.aio.AioRpcError | None, *,
    relayed: bool, ended: AttemptEnded | None = None,
    count: Callable[[str, str], None] = lambda service, how: None,
) -> NoReturn:
    """Raise :class:`Retry` or :class:`Final` for a failed attempt.

    ``err`` is the call's status, or None when the hold ended the attempt
    (``ended``); ``count(service, how)`` records retries for metrics.
    """
    stalled = None
    if ended is not None:
        stalled = CallFailure(FailureKind.STALLED, server=server.address, relayed=relayed)
    failure, decision = report(path, lst, server, err, relayed=relayed, failure=stalled)
    error: Error
    if ended is not None:
        error = ServerStalled(
            f"{lst.service} server {server.address} stopped answering: {ended.reason}",
            metadata={"server": server.address},
        )
    else:
        assert err is not None
        error = err
    if decision.action is RetryAction.FOLLOW_LEADER and decision.leader:
        if lst.follow_hint(decision.leader, decision.leader_term, source=server.address):
            count(lst.service, "follow_leader")
            raise Retry(error, follow=True)
        count(lst.service, "next_server")
        raise Retry(error)
    if decision.action is RetryAction.RETRY_NEXT:
        count(lst.service, "next_server")
        raise Retry(error)
    if failure.kind in OUTCOME_UNKNOWN_KINDS and not is_read(path) and not relayed:
        raise Final(ForwardOutcomeUnknown(
            f"{path.rsplit('/', 1)[-1]} may or may not have been applied: "
            f"{lst.service} server {server.address} "
            + (f"stopped answering ({ended.reason})" if ended is not None
               else "dropped the connection")
            + "; not repeating it",
            metadata={"server": server.address, "method": path},
        ))
    raise Final(error)
