"""The event feed: every replica keeps its broker in step with the store.

Writers never call the broker: new evaluations reach it through the state
service's event stream. Every replica, leader or not, runs one feed:

1. restore: page through every non-terminal evaluation (ListEvaluations,
   consistent reads) and load them in one bulk pass;
2. follow: Subscribe to evaluations and the scheduler config from the
   index of the *first* page, so a change made while paging is replayed
   (applying an evaluation twice is harmless: the core is idempotent per
   id and ignores bodies older than the one it holds).

That makes a follower a hot standby: promotion needs no rescan. The feed
records the index it has applied; a new leader waits for it to reach the
store's index read after winning (the barrier), so it never acts on a view
older than what the previous leader wrote.

Failures: a broken or slow stream resumes from the applied index (the
state service replays from its ring or etcd's history); only a compacted
index forces a full restore (:class:`ResyncNeeded`). The feed retries
forever with a short backoff: the broker without its feed is stale, not
dead, and the barrier keeps a stale replica from leading.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Protocol

from drover.api.state.v1 import state_pb2
from drover.api.types.v1.evaluation_pb2 import Evaluation
from drover.api.types.v1.scheduler_pb2 import SchedulerConfig
from drover.broker.errors import ResyncNeeded
from drover.broker.state_api import BrokerStateApi
from drover.errors import DroverError

__all__ = ["EventFeed", "FeedSink"]

log = logging.getLogger(__name__)

PAGE_SIZE = 1000


class FeedSink(Protocol):
    """What the feed drives (the broker runtime)."""

    def restored(self, evaluations: Sequence[Evaluation]) -> None: ...

    def applied(self, updates: Sequence[Evaluation], deleted: Sequence[str]) -> None: ...

    def config_changed(self, config: SchedulerConfig) -> None: ...


class EventFeed:
    def __init__(
        self, api: BrokerStateApi, sink: FeedSink, *, page_size: int = PAGE_SIZE,
        retry_backoff: float = 0.2,
    ) -> None:
        self._api = api
        self._sink = sink
        self._page_size = page_size
        self._backoff = retry_backoff
        self.applied_index = 0
        self.restores = 0
        self.restored = asyncio.Event()
        self._advanced = asyncio.Event()

    async def wait_applied(self, index: int) -> None:
        """Return once the feed has applied every change up to ``index``."""
        while self.applied_index < index or not self.restored.is_set():
            self._advanced.clear()
            await self._advanced.wait()

    async def run(self) -> None:
        need_restore = True
        while True:
            try:
                if need_restore:
                    await self._restore()
                    need_restore = False
                await self._follow()
            except ResyncNeeded as err:
                log.warning("broker feed: %s; restoring from the store", err.message)
                need_restore = True
            except DroverError as err:
                log.warning("broker feed: %s; resuming from index %d", err.message,
                            self.applied_index)
            await asyncio.sleep(self._backoff)

    async def _restore(self) -> None:
        evaluations: list[Evaluation] = []
        token, first_index = "", 0
        while True:
            page, token, index = await self._api.list_held(token, self._page_size)
            first_index = first_index or index
            evaluations.extend(page)
            if not token:
                break
        config = await self._api.scheduler_config()
        self._sink.restored(evaluations)
        self._sink.config_changed(config)
        self.restores += 1
        log.info("broker feed: restored %d evaluations at index %d", len(evaluations),
                 first_index)
        # The first page's index: later pages may be newer, and the stream
        # replays whatever changed after it.
        self._advance(first_index, force=True)
        self.restored.set()

    async def _follow(self) -> None:
        upsert = state_pb2.EVENT_TYPE_UPSERT
        topic_eval = state_pb2.TOPIC_EVALUATION
        topic_config = state_pb2.TOPIC_SCHEDULER_CONFIG
        async for resp in self._api.subscribe(self.applied_index):
            if resp.index <= self.applied_index and resp.events:
                continue  # a replayed revision already applied
            updates: list[Evaluation] = []
            deleted: list[str] = []
            for event in resp.events:
                if event.topic == topic_eval:
                    if event.type == upsert:
                        updates.append(event.evaluation)
                    else:
                        deleted.append(event.key)
                elif event.topic == topic_config and event.type == upsert:
                    self._sink.config_changed(event.scheduler_config)
            if updates or deleted:
                self._sink.applied(updates, deleted)
            self._advance(resp.index)

    def _advance(self, index: int, *, force: bool = False) -> None:
        if index > self.applied_index or force:
            self.applied_index = index
            self._advanced.set()
