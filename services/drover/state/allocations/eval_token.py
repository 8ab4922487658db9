"""SubmitPlan's eval token check: is the plan's (evaluation, token) still
outstanding at the broker? (the pure rules are
:mod:`drover.state.allocations.core.eval_token`). The broker owns the
evaluation's delivery; the state only checks the token a plan carries
(refusals keep the wire reason PLAN_DELIVERY_ENDED).

Nomad's ``Plan.Submit`` asks its own broker (same process, the leader) and
pauses the evaluation's nack timer while the plan is applied. Here the
broker is another service, possibly failing over, and any state replica
applies plans, so the check is made of three parts, each closing a gap:

1. Read the broker leader from etcd (its election key: address, term; a
   linearizable read). A token of another term was handed out by an
   earlier leader: its evaluation has been restored and will be (or was)
   delivered again -- refused at once. The leader read last is kept and
   asked first while the token is of its term: it is read again whenever
   a token names another term or the kept leader cannot answer, and a kept
   leader that was deposed meanwhile cannot commit a plan (step 3
   compares its term's key, which is gone).
2. Ask that leader ``OutstandingReset(eval_id, token)``: it answers only
   while the token holds the evaluation unacked, and restarts its nack
   timer, so the delivery cannot time out while the plan is applied
   (the broker's nack timeout, 60 s by Nomad's default, is longer than any
   plan apply, which the caller's deadline bounds; Nomad pauses the timer
   instead and resumes it after). A refusal (not outstanding, token
   expired, another token) is PLAN_DELIVERY_ENDED.
3. The plan's txn compares the leader's election key's create revision
   with that term: if the broker failed over between the check and the
   commit (the new leader may already have redelivered the evaluation),
   the txn fails and the plan is refused as ended, never applied.

The worker nacks only after its SubmitPlan returned, so its own Nack
cannot overtake the plan. When the broker cannot be asked (no leader, not
established, unreachable, etcd unavailable) the plan fails closed:
UNAVAILABLE with BROKER_UNREACHABLE; the worker retries or nacks.

:class:`Unchecked` is for tests and benchmarks that run no broker; the
served state service (:func:`drover.state.app.build_state_service`)
always checks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import grpc

from drover.api.broker.v1 import broker_pb2, broker_pb2_grpc
from drover.coord.election import observe
from drover.coord.keys import Keyspace
from drover.coord.kv import Ranges
from drover.errors import DroverError
from drover.rpc.remote import from_rpc_error
from drover.state.allocations.core.eval_token import BROKER_REASONS, check_term, ended, token_term
from drover.state.errors import BrokerUnreachable

BROKER_SERVICE = "broker"
#: A vouched delivery: the broker leader's election key and term, compared in the txn.
Vouched = tuple[bytes, int]


class TokenCheck(Protocol):
    async def vouch(self, eval_id: str, token: str) -> Vouched | None:
        """Raise unless the delivery is outstanding; what the txn compares."""
        ...

    async def close(self) -> None: ...

    async def still_leads(self, vouched: Vouched) -> bool:
        """Whether the broker leader that vouched still holds its key."""
        ...


class Unchecked:
    """No broker to ask (tests, benchmarks): every plan is applied."""

    async def vouch(self, eval_id: str, token: str) -> Vouched | None:
        return None

    async def close(self) -> None:
        return None

    async def still_leads(self, vouched: Vouched) -> bool:
        return True


class BrokerTokenCheck:
    def __init__(self, kv: Ranges, keyspace: Keyspace,
                 dial: Callable[[str], grpc.aio.Channel], *, timeout: float = 5.0) -> None:
        self._kv, self._keyspace, self._dial, self._timeout = kv, keyspace, dial, timeout
        self._channels: dict[str, grpc.aio.Channel] = {}
        # The broker leader read last (address, term, election key); see step 1.
        self._known: tuple[str, int, str] | None = None

    async def _leader(self) -> tuple[str, int, str]:
        try:
            info = await observe(self._kv, self._keyspace, BROKER_SERVICE,
                                 rpc_timeout=self._timeout)
        except DroverError as e:
            raise BrokerUnreachable(f"the broker leader could not be read: {e}") from e
        if info is None:
            self._known = None
            raise BrokerUnreachable("no broker leader to ask whether the evaluation's "
                                    "delivery is outstanding; retry")
        self._known = info.address, info.term, info.leader_key
        return self._known

    async def vouch(self, eval_id: str, token: str) -> Vouched | None:
        known = self._known
        if known is not None and known[1] == token_term(token):
            try:
                return await self._ask(eval_id, token, *known)
            except BrokerUnreachable:
                pass  # deposed or gone: read who leads now, and ask it once
        address, term, key = await self._leader()
        check_term(eval_id, token, term)
        return await self._ask(eval_id, token, address, term, key)

    async def _ask(self, eval_id: str, token: str, address: str, term: int,
                   key: str) -> Vouched:
        """OutstandingReset at the leader ``address`` of ``term``."""
        ch = self._channels.get(address)
        if ch is None:
            ch = self._channels[address] = self._dial(address)
        try:
            await broker_pb2_grpc.EvalBrokerServiceStub(ch).OutstandingReset(
                broker_pb2.OutstandingResetRequest(eval_id=eval_id, token=token),
                timeout=self._timeout)
        except grpc.RpcError as e:
            err = from_rpc_error(e)
            if err.reason in BROKER_REASONS:
                raise ended(eval_id, err.reason, err.message) from e
            if self._known is not None and self._known[0] == address:
                self._known = None
            raise BrokerUnreachable(f"the broker leader at {address} could not vouch for "
                                    f"evaluation {eval_id!r}: {err.message} ({err.reason})") from e
        return key.encode(), term

    async def still_leads(self, vouched: Vouched) -> bool:
        try:
            _, term, key = await self._leader()
        except BrokerUnreachable:
            return False
        return (key.encode(), term) == vouched

    async def close(self) -> None:
        for ch in self._channels.values():
            await ch.close()
        self._channels.clear()
