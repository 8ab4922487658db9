"""Readiness checks shared by services (see :mod:`drover.rpc.health`).

Each returns a :data:`~drover.rpc.health.Check`: an async callable answering
None when satisfied, else a short reason.
"""

from __future__ import annotations

from drover.coord import Keyspace, observe
from drover.coord.kv import Ranges
from drover.errors import DroverError
from drover.rpc.health import Check


def leader_known(kv: Ranges, keyspace: Keyspace, service: str) -> Check:
    """A leader-only service is ready when a leader is elected (a follower
    then answers with its address): one linearizable etcd read per check."""

    async def check() -> str | None:
        try:
            info = await observe(kv, keyspace, service, rpc_timeout=1.5)
        except DroverError as e:
            return f"cannot read the {service} election: {e}"
        return None if info is not None else f"no {service} leader is elected"

    return check
