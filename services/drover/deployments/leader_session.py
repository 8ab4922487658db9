"""One term's state of the deployment-watcher leader, shared by its two
halves: ingesting changes (:mod:`.leader`) and writing results
(:mod:`.results`). Leader only; dropped whole on revoke or resync."""

from __future__ import annotations

import asyncio
import collections
from typing import Any

from drover.api.deployments.v1 import deployments_pb2
from drover.api.types.v1 import deployment_pb2
from drover.coord.term import Term

from .core.effects import Decision
from .core.manager import WatcherManager

Result = deployments_pb2.DeploymentUpdateResult
Job = tuple[Decision, "asyncio.Future[Result] | None"]


class Session:
    """One term's leader state; dropped whole on revoke or resync."""

    def __init__(self, term: Term, manager: WatcherManager) -> None:
        self.term = term
        self.manager = manager
        self.stored: dict[str, deployment_pb2.Deployment] = {}
        self.echoes: dict[str, collections.deque[bytes]] = {}
        # deployment id -> stream events buffered while it is being tracked
        self.tracking: dict[str, list[tuple[bool, Any]]] = {}
        self.track_tasks: dict[str, asyncio.Task[None]] = {}
        self.queues: dict[str, collections.deque[Job]] = {}
        # deployment id -> set when a decision is queued (a held write wakes)
        self.arrivals: dict[str, asyncio.Event] = {}
        self.kick = asyncio.Event()
        # A step of the woken watchers is scheduled (see leader._on_allocations).
        self.step_due = False
        #: The session's active deployments are listed (the barrier read):
        #: the term is established; ``ready`` once every one is tracked.
        self.listed = asyncio.Event()
        self.ready = asyncio.Event()
        self.tg: asyncio.TaskGroup | None = None
        self.writes = 0
        self.task: asyncio.Task[None] | None = None
