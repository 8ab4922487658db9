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

* in-process, :func:`fence_compare` (a typed :class:`~drover.coord.kv.Compare`)
  and :func:`fenced_txn` (runs a txn with the fence on a small typed KV,
  raises :class:`FenceLost` when the fence, not the caller's own compares,
  failed);
* over the wire, metadata ``drover-fence: <leader_key>@<term>``
  (:meth:`Fence.header` / :func:`parse_fence`), which the broker and the
  deployment watcher attach and the state service turns back into a compare.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from drover.coord.errors import FenceLost, InvalidFence
from drover.coord.kv import Compare, Op, Ranges, TxnResult, Txns

__all__ = [
    "FENCE_METADATA",
    "Fence",
    "FenceKV",
    "fence_compare",
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


def fence_compare(fence: Fence) -> Compare:
    """``create_revision(leader_key) == term``."""
    return Compare(fence.leader_key.encode(), "create", fence.term)


class FenceKV(Txns, Ranges, Protocol):
    """What a fenced write needs: a txn, and a read to explain a failed one."""


async def fenced_txn(
    kv: FenceKV,
    fence: Fence,
    compares: Sequence[Compare] = (),
    ops: Sequence[Op] = (),
    *,
    on_lost: Callable[[str], None] | None = None,
) -> TxnResult:
    """Run a txn of ``compares`` and ``ops`` guarded by ``fence``.

    Returns the result when the caller's own compares decided; raises
    :class:`FenceLost` (after calling ``on_lost``, which ends leadership at
    once) when the fence failed. Which one failed is read after a failed
    txn: a term is never regained (every win creates the key anew), so a
    read that still shows the term proves the fence held at the txn too,
    and one that does not proves it is lost now.
    """
    result = await kv.txn([*compares, fence_compare(fence)], ops)
    if result.succeeded:
        return result
    page = await kv.range(fence.leader_key.encode(), b"")
    current = page.kvs[0].create_revision if page.kvs else 0
    if current != fence.term:
        reason = (f"fence {fence.header()} lost: leader key "
                  + (f"now has term {current}" if current else "is gone"))
        if on_lost is not None:
            on_lost(reason)
        raise FenceLost(reason, metadata={"leader_key": fence.leader_key,
                                          "term": str(fence.term)})
    return result
