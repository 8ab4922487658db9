"""The live feed: drover's event stream (Subscribe) as server-sent events.

``GET /ui/events?topics=Job,Allocation&namespace=default&job=web&from_index=N``
opens one Subscribe through the proxy with the user's token, from the index
of the page the browser shows, and tells the page what changed:

* ``event: change`` (``id:`` the index): objects the page shows changed at
  that index; the page re-fetches its content. One message per etcd
  revision at most, however many objects it touched.
* ``event: heartbeat``: nothing for this page, the index moved on (the
  browser keeps it, so a reconnect resumes from there, not from the page's).
* ``event: resync``: the index was compacted away (``INDEX_COMPACTED``): the
  page re-reads everything and subscribes again from now.
* ``event: failed``: drover refused the stream; ``data`` is the CLI's line.

A lost stream (the UI restarted, the network dropped) is reopened by the
browser from the last index it was told (``static/ui.js``); the proxy in
turn resumes its own Subscribe on another replica. The pure parts
(:func:`sse`, :class:`Scope`) are unit-tested.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import grpc
from aiohttp import web
from google.protobuf.duration_pb2 import Duration

from drover.api.state.v1 import state_pb2
from drover.rpc.remote import remote_status
from drover.ui.errors import failure

#: Topic names a page may ask for (the proto's, without the prefix).
TOPICS: Mapping[str, int] = {
    "Job": state_pb2.TOPIC_JOB, "Evaluation": state_pb2.TOPIC_EVALUATION,
    "Deployment": state_pb2.TOPIC_DEPLOYMENT, "Allocation": state_pb2.TOPIC_ALLOCATION,
    "Node": state_pb2.TOPIC_NODE,
}
#: How long the browser waits before reconnecting a stream that ended (ms).
RETRY_MS = 500


def sse(event: str, data: object, id_: int | None = None) -> bytes:
    """One server-sent event, JSON data on one line."""
    head = f"id: {id_}\n" if id_ is not None else ""
    return f"{head}event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


@dataclass(frozen=True)
class Scope:
    """Which events concern a page: its topics, and for a job's page only
    that job's objects (allocations and deployments name their job)."""

    topics: tuple[int, ...]
    namespace: str = ""
    job: str = ""

    @classmethod
    def parse(cls, query: Mapping[str, str]) -> Scope:
        names = [t for t in (query.get("topics") or "").split(",") if t]
        unknown = [t for t in names if t not in TOPICS]
        if unknown:
            raise ValueError(f"unknown topic {unknown[0]!r}: one of {', '.join(TOPICS)}")
        return cls(tuple(TOPICS[t] for t in names), query.get("namespace") or "",
                   query.get("job") or "")

    def concerns(self, event: state_pb2.Event) -> bool:
        if self.topics and event.topic not in self.topics:
            return False
        if not self.job:
            return True
        if event.topic == state_pb2.TOPIC_JOB:
            return event.key == self.job
        payload = event.WhichOneof("payload")
        if payload is None:  # a delete without its object: cannot tell, refresh
            return True
        return getattr(getattr(event, payload), "job_id", self.job) == self.job

    def changed(self, events: Iterable[state_pb2.Event]) -> list[str]:
        """Topics of the events this page shows (empty: none)."""
        return sorted({state_pb2.Topic.Name(e.topic).removeprefix("TOPIC_").lower()
                       for e in events if self.concerns(e)})

    def request(self, from_index: int, heartbeat: float) -> state_pb2.SubscribeRequest:
        req = state_pb2.SubscribeRequest(topics=list(self.topics),  # type: ignore[arg-type]
                                         namespace=self.namespace,
                                         from_index=from_index)
        req.heartbeat_interval.CopyFrom(Duration(nanos=int(heartbeat * 1e9) % 1_000_000_000,
                                                 seconds=int(heartbeat)))
        return req


async def stream(request: web.Request, subscribe: Callable[[state_pb2.SubscribeRequest], Any],
                 heartbeat: float) -> web.StreamResponse:
    """The SSE response for one browser stream (``subscribe``: the stub's
    Subscribe, called with the request's token in context)."""
    try:
        scope = Scope.parse(request.query)
        from_index = int(request.query.get("from_index") or 0)
    except ValueError as e:
        raise web.HTTPBadRequest(text=str(e)) from None
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                       "Cache-Control": "no-store",
                                       "X-Accel-Buffering": "no"})
    await resp.prepare(request)
    await resp.write(f"retry: {RETRY_MS}\n\n".encode())
    call = subscribe(scope.request(from_index, heartbeat))
    try:
        async for msg in call:
            changed = scope.changed(msg.events)
            if changed:
                await resp.write(sse("change", {"index": msg.index, "topics": changed},
                                     msg.index))
            else:
                await resp.write(sse("heartbeat", {"index": msg.index}, msg.index))
    except ConnectionResetError:  # the browser left
        pass
    except grpc.RpcError as err:
        status = remote_status(err)
        if status.code == "OUT_OF_RANGE":
            event = sse("resync", {"reason": status.reason})
        else:
            _, code, line = failure(err)
            event = sse("failed", {"code": code, "message": line})
        with contextlib.suppress(ConnectionResetError):  # the browser left meanwhile
            await resp.write(event)
    finally:
        call.cancel()
    return resp
