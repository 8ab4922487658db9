"""What the user's token may do, asked of the server, so pages offer only that.

A client token's policies cannot be read with the token itself (ListPolicies
needs management), and the UI must not guess from names. So it asks the
server the way every call is judged: each action's RPC is sent once with an
empty target (no deployment, job or node id). The ACL interceptor judges the
capability before the request is even validated: PERMISSION_DENIED or
UNAUTHENTICATED means the token lacks it; any other answer (INVALID_ARGUMENT,
NOT_FOUND) means it holds it, and nothing was changed, since an empty id
names nothing. ``GetSelfToken`` names the token, and a management token
skips the probes. The answer is kept per token and namespace for a few
seconds (:class:`CapabilityCache`), so a live page does not ask on every
refresh.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import grpc

from drover.api.acl.v1 import acl_pb2
from drover.api.deployments.v1 import deployments_pb2
from drover.api.state.v1 import state_pb2
from drover.coord.clock import Clock, monotonic
from drover.rpc.remote import remote_status
from drover.ui.backend import Backend, current_token

#: Answers that say the token lacks the capability.
DENIALS = frozenset({"PERMISSION_DENIED", "UNAUTHENTICATED"})


@dataclass(frozen=True)
class Capabilities:
    #: promote, fail, pause/resume, stop/start, revert (namespace submit-job)
    submit_job: bool = False
    #: scale a group (namespace scale-job)
    scale_job: bool = False
    #: drain, eligibility (node write)
    node_write: bool = False
    #: The token's name and kind, for the header ("anonymous": none given).
    token_name: str = "anonymous"
    management: bool = False


def allowed(code: str) -> bool:
    """Whether a probe's status code grants the capability."""
    return code not in DENIALS


async def _probe(call: Callable[..., Awaitable[object]], request: object, per_call: float) -> bool:
    try:
        await call(request, timeout=per_call)
    except grpc.RpcError as err:
        return allowed(remote_status(err).code)
    return True


async def probe(backend: Backend, namespace: str) -> Capabilities:
    """Ask the server what the current request's token may do in ``namespace``."""
    t = backend.timeout
    name, management = "anonymous", False
    if current_token():
        try:
            token = (await backend.acl.GetSelfToken(acl_pb2.GetSelfTokenRequest(),
                                                    timeout=t)).token
            name = token.name or token.accessor_id[:8]
            management = token.type == acl_pb2.TOKEN_TYPE_MANAGEMENT
        except grpc.RpcError as err:
            # ACLs off (the token means nothing) or a token the server refuses;
            # the probes below tell which actions that leaves.
            name = "invalid token" if remote_status(err).code == "UNAUTHENTICATED" else "token"
    if management:
        return Capabilities(True, True, True, name, True)
    submit, scale, node = await asyncio.gather(
        _probe(backend.deployments.PromoteDeployment,
               deployments_pb2.PromoteDeploymentRequest(namespace=namespace), t),
        _probe(backend.state.ScaleJob, state_pb2.ScaleJobRequest(namespace=namespace), t),
        _probe(backend.state.UpdateNodeDrain, state_pb2.UpdateNodeDrainRequest(), t),
    )
    return Capabilities(submit, scale, node, name, False)


class CapabilityCache:
    """:func:`probe`'s answers per (token, namespace), each for ``ttl`` seconds.
    Keyed by the token's hash: no secret is kept in memory as a key."""

    def __init__(self, ttl: float, clock: Clock = monotonic, max_entries: int = 1024) -> None:
        self.ttl = ttl
        self._clock = clock
        self._max = max_entries
        self._entries: dict[tuple[str, str], tuple[float, Capabilities]] = {}

    @staticmethod
    def key(token: str, namespace: str) -> tuple[str, str]:
        return hashlib.sha256(token.encode()).hexdigest(), namespace

    def get(self, token: str, namespace: str) -> Capabilities | None:
        hit = self._entries.get(self.key(token, namespace))
        if hit is None or self._clock() - hit[0] > self.ttl:
            return None
        return hit[1]

    def put(self, token: str, namespace: str, caps: Capabilities) -> None:
        if len(self._entries) >= self._max:
            now = self._clock()
            self._entries = {k: v for k, v in self._entries.items() if now - v[0] <= self.ttl}
            if len(self._entries) >= self._max:
                self._entries.clear()
        self._entries[self.key(token, namespace)] = (self._clock(), caps)

    async def of(self, backend: Backend, namespace: str) -> Capabilities:
        token = current_token()
        caps = self.get(token, namespace)
        if caps is None:
            caps = await probe(backend, namespace)
            self.put(token, namespace, caps)
        return caps
