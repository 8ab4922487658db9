"""The client proxy's domain metrics, read at scrape time.

* ``drover.proxy.servers``: servers on each list, by ``service``.
* ``drover.proxy.rotations``: failed calls that rotated a list's front
  server to the back, by ``service`` (counter).
* ``drover.proxy.retries``: forwarded attempts retried elsewhere, by
  ``service`` and ``kind``: ``next_server`` (a failover) or
  ``follow_leader`` (a leader hint) (counter).
* ``drover.proxy.attempts_ended``: forwarded attempts the proxy ended
  because their server showed no life within the hold timeout
  (``cause="hold_timeout"``) or left membership (``cause="left_membership"``)
  (counter).
* ``drover.proxy.stream_resumes``: Subscribe streams resumed on another
  replica after delivering, by ``service`` (counter).
* ``drover.proxy.membership.applied_revision``: the membership revision the
  lists reflect (what the convergence barrier compares).
"""

from __future__ import annotations

from collections.abc import Callable

from drover.proxy.core.server_lists import ServerLists
from drover.proxy.forward import Forwarder
from drover.telemetry.observed import observe


def register(lists: ServerLists, forwarder: Forwarder) -> list[Callable[[], None]]:
    return [
        observe("drover.proxy.servers",
                lambda: [(len(lists.get(s).servers), {"service": s}) for s in lists.services],
                unit="{server}", description="servers on the proxy's list, by backend service"),
        observe("drover.proxy.rotations",
                lambda: [(lists.get(s).rotations, {"service": s}) for s in lists.services],
                kind="counter", unit="{rotation}",
                description="failed calls that rotated the front server to the back"),
        observe("drover.proxy.retries",
                lambda: [(forwarder.retries.get((s, k), 0), {"service": s, "kind": k})
                         for s in lists.services for k in ("next_server", "follow_leader")],
                kind="counter", unit="{attempt}",
                description="forwarded attempts retried on another server or at the leader"),
        observe("drover.proxy.attempts_ended",
                lambda: [(forwarder.holds.ended.get(c, 0), {"cause": c})
                         for c in ("hold_timeout", "left_membership")],
                kind="counter", unit="{attempt}",
                description="forwarded attempts ended: no life within the hold, or gone"),
        observe("drover.proxy.stream_resumes",
                lambda: [(forwarder.resumes.get(s, 0), {"service": s}) for s in lists.services],
                kind="counter", unit="{stream}",
                description="streams resumed on another replica from the last delivered index"),
        observe("drover.proxy.membership.applied_revision",
                lambda: [(lists.applied_revision, {})], unit="1",
                description="the membership revision the server lists reflect"),
    ]
