"""Missed heartbeats, the leader's duty: while it leads, the broker has the
state service mark down every ready node whose heartbeat lease expired
(``ReapMissedHeartbeats``, fenced with the term), every
``heartbeat_check_interval``. Detection is etcd's lease expiry, so the loop
holds nothing: a new leader starts it afresh and marks down only nodes
that are really silent (design: :mod:`drover.state.nodes.core.liveness`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from drover.broker.state_api import BrokerStateApi
from drover.coord.term import Term
from drover.errors import DroverError, FenceLost

log = logging.getLogger(__name__)


async def reap_missed_heartbeats(api: BrokerStateApi, term: Term, alive: Callable[[], bool],
                                 interval: float) -> None:
    """Run for the term (its task group cancels it)."""
    while True:
        await asyncio.sleep(interval)
        while alive():  # checked right before each leader write (the guard's rule)
            try:
                resp = await api.reap_missed_heartbeats(term.fence)
            except FenceLost as e:
                term.report_lost(f"marking silent nodes down: {e}")
                return
            except DroverError as e:
                log.warning("marking silent nodes down: %s", e)
                break
            if resp.node_ids:
                log.warning("nodes missed their heartbeats, marked down: %s (%d allocations "
                            "lost, %d evaluations)", ", ".join(resp.node_ids), resp.lost,
                            len(resp.eval_ids))
            if not resp.remaining:
                break
