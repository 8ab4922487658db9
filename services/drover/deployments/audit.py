"""The watcher leader's audit: an active deployment left without a watcher
is tracked again.

The leader trusts its two Subscribe streams, and a deployment whose event
never arrived, or whose re-read after a failed write gave up, would stay
active with nothing steering it (issue 41: one run in three of the rolling
upgrade). Nomad's deploymentwatcher does not rely on a stream alone: it
re-reads the deployments with blocking queries, so a missed change heals.
Here, every ``audit_interval`` (:class:`~.config.LeaderConfig`), one paged
consistent list of the active deployments (one query per 500, whatever the
number of watchers); a deployment listed active, with no watcher, no
tracking and no write under way, *unchanged since the previous audit*, is
tracked again. One whole interval first, so a deployment just finished (its
terminal write landed after the list) or just created (its event on its
way) is never taken for lost. A list no replica answers is skipped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from drover.api.types.v1 import deployment_pb2
from drover.errors import Unavailable

from .config import LeaderConfig
from .leader_session import Session
from .state_api import StateApi

log = logging.getLogger(__name__)


async def audit(run: Session, state: StateApi, config: LeaderConfig,
                retrack: Callable[[Session, str], Any]) -> None:
    """Run the audit for ``run``'s session (module doc); ``retrack`` starts
    tracking a deployment whose ``run.stored`` entry is set."""
    unwatched: dict[str, int] = {}
    while True:
        await asyncio.sleep(config.audit_interval)
        await run.ready.wait()
        try:
            listed, _ = await state.list_active_deployments()
        except Unavailable as err:  # no replica answered: the next audit
            log.info("deployment audit skipped: %r", err)
            continue
        now = {d.id: d.modify_index for d in listed if _unwatched(run, d)}
        for d in listed:
            if d.id in now and unwatched.get(d.id) == d.modify_index:
                log.warning("deployment %s is active with no watcher since the last audit "
                            "(an event missed?); tracking it again", d.id)
                known = run.stored.get(d.id)
                if known is None or known.modify_index < d.modify_index:
                    run.stored[d.id] = d
                retrack(run, d.id)
        unwatched = now


def _unwatched(run: Session, d: deployment_pb2.Deployment) -> bool:
    return run.manager.wants(d) and d.id not in run.tracking and d.id not in run.queues
