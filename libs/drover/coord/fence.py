"""Fencing: every leader write proves, inside the etcd txn, that the writer
still holds the term it was elected for.

A lease alone never proves exclusivity: a leader paused past its TTL (GC,
SIGSTOP, a slow disk) wakes up believing it leads while another replica has
already won (Jepsen on etcd locks; Kubernetes' leader election has no fence).
The fence is the election key plus its create_revision (the *term*): the key
is recreated with a new create_revision on every win, so the compare
``create_revision(leader_key) == term`` fails for any older leader, at the
moment of the write, whatever the writer believes.

Two forms:

* in-process, :func:`fence_compare` (an aetcd compare) and :func:`fenced_txn`
  (runs a txn with the fence, raises :class:`FenceLost` when the fence, not
  the caller's own compares, failed);
* over the wire, metadata ``drover-fence: <leader_key>@<term>``
  (:meth:`Fence.header` / :func:`parse_fence`), which the broker and the
  deployment watcher attach and the state service turns back into a compare.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from aetcd import rpc, transactions

from drover.coord.errors import FenceLost, InvalidFence

__all__ = [
    "FENCE_METADATA",
    "Fence",
    "TxnClient",
    "fence_compare",
    "fence_compare_pb",
    "fenced_txn",
    "parse_fence",
]

FENCE_METADATA = "drover-fence"

_MAX_HEADER = 1024


@dataclass(frozen=True, slots=True)
class Fence:
    """The election key and its create_revision (the term)."""

    leader_key: str
    term: int

    def __post_init__(self) -> None:
        if not self.leader_key.startswith("/") or "@" in self.leader_key:
            raise InvalidFence(f"fence key must be an absolute etcd key without '@': "
                               f"{self.leader_key!r}")
        if self.term <= 0:
            raise InvalidFence(f"fence term must be a positive revision, got {self.term}")

    def header(self) -> str:
        """The ``drover-fence`` metadata value."""
        return f"{self.leader_key}@{self.term}"

    def metadata(self) -> tuple[tuple[str, str]]:
        return ((FENCE_METADATA, self.header()),)


def parse_fence(value: str) -> Fence:
    """Parse a ``drover-fence`` value; :class:`InvalidFence` when malformed."""
    if not value or len(value) > _MAX_HEADER:
        raise InvalidFence("empty or oversized drover-fence value",
                           metadata={"field": FENCE_METADATA})
    key, sep, term = value.rpartition("@")
    if not sep or not key or not term.isdigit() or term.startswith("0"):
        raise InvalidFence(f"drover-fence must be '<leader_key>@<term>', got {value!r}",
                           metadata={"field": FENCE_METADATA})
    return Fence(key, int(term))


def fence_compare(fence: Fence) -> transactions.Create:
    """``create_revision(leader_key) == term`` for ``aetcd.Client.transaction``."""
    return transactions.Create(fence.leader_key.encode()) == fence.term  # type: ignore[return-value]


def fence_compare_pb(fence: Fence) -> Any:
    """The same compare as an etcd ``Compare`` message, for raw TxnRequests."""
    return rpc.Compare(
        key=fence.leader_key.encode(),
        target=rpc.Compare.CREATE,
        result=rpc.Compare.EQUAL,
        create_revision=fence.term,
    )


class TxnClient(Protocol):
    """The one client operation a fenced write needs."""

    async def transaction(
        self, compare: list[Any], success: list[Any] | None = ..., failure: list[Any] | None = ...
    ) -> tuple[bool, list[Any]]: ...


async def fenced_txn(
    client: TxnClient,
    fence: Fence,
    compare: Sequence[Any] = (),
    success: Sequence[Any] = (),
    failure: Sequence[Any] = (),
    *,
    on_lost: Callable[[str], None] | None = None,
) -> tuple[bool, list[Any]]:
    """Run a txn guarded by ``fence``.

    Returns ``(succeeded, responses)`` like aetcd when the caller's own
    compares decided; raises :class:`FenceLost` (after calling ``on_lost``,
    which ends leadership at once) when the fence failed. A read of the
    leader key rides in the failure branch to tell the two apart in one
    round trip.
    """
    key = fence.leader_key.encode()
    ok, responses = await client.transaction(
        compare=[*compare, fence_compare(fence)],
        success=list(success),
        failure=[*failure, transactions.Get(key)],
    )
    if ok:
        return True, responses
    probe = responses[-1] if responses else []
    current = probe[0][1].create_revision if probe else 0
    if current != fence.term:
        reason = (f"fence {fence.header()} lost: leader key "
                  + (f"now has term {current}" if current else "is gone"))
        if on_lost is not None:
            on_lost(reason)
        raise FenceLost(reason, metadata={"leader_key": fence.leader_key,
                                          "term": str(fence.term)})
    return False, responses[:-1]
