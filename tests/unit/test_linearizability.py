"""The linearizability checker (tests/linearizability) on made-up
histories: what is linearizable passes; a stale read after a completed
write, a lost write, two CASes from one version that both succeed, and a
different re-create accepted fail; unknown outcomes may or may not have
happened; keys are checked apart."""

from __future__ import annotations

import random

import grpc
import pytest
from linearizability import History, Operation, check
from linearizability.checker import UNKNOWN, check_one
from linearizability.job_clients import JobClients
from linearizability.models import EVALUATIONS, JOBS

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import evaluation_pb2


def op(client: int, inp: tuple, call: float, out: object = UNKNOWN, ret: float = float("inf"),
       key: str = "j") -> Operation:
    return Operation(client, key, inp, call, out, ret)


def test_concurrent_writes_and_reads_in_some_order_pass() -> None:
    h = [op(1, ("write", "a"), 0, 10, 5),
         op(2, ("write", "b"), 1, 12, 6),
         op(3, ("read",), 2, (10, "a"), 3),   # a's write applied, b's not yet
         op(3, ("read",), 7, (12, "b"), 8),
         op(1, ("cas", 12, "c"), 9, 15, 11),
         op(2, ("cas", 12, "d"), 9.5, False, 12),  # lost the race: refused
         op(3, ("read",), 13, (15, "c"), 14)]
    assert check(JOBS, h).ok


def test_a_stale_read_after_a_completed_write_fails() -> None:
    h = [op(1, ("write", "a"), 0, 10, 1),
         op(1, ("write", "b"), 2, 12, 3),
         op(2, ("read",), 4, (10, "a"), 5)]  # b completed before this read began
    result = check(JOBS, h)
    assert not result.ok and list(result.bad_keys) == ["j"]
    assert "read" in result.report(JOBS)
    # the same read overlapping b's write may see a
    assert check(JOBS, [*h[:2], op(2, ("read",), 2.5, (10, "a"), 5)]).ok


def test_a_lost_write_fails() -> None:
    h = [op(1, ("write", "a"), 0, 10, 1),
         op(2, ("write", "b"), 2, 12, 3),   # acknowledged ...
         op(3, ("read",), 4, (10, "a"), 5),  # ... but never seen
         op(3, ("read",), 6, (10, "a"), 7)]
    assert not check(JOBS, h).ok


def test_two_cas_from_one_version_that_both_succeed_fail() -> None:
    h = [op(1, ("write", "a"), 0, 10, 1),
         op(2, ("cas", 10, "b"), 2, 12, 4),
         op(3, ("cas", 10, "c"), 2, 13, 4)]
    assert not check(JOBS, h).ok
    assert check(JOBS, [h[0], h[1], op(3, ("cas", 10, "c"), 2, False, 4)]).ok


def test_indexes_only_grow() -> None:
    h = [op(1, ("write", "a"), 0, 10, 1), op(2, ("write", "b"), 2, 9, 3)]
    assert not check(JOBS, h).ok


def test_unknown_outcomes_may_or_may_not_have_happened() -> None:
    lost_answer = op(1, ("write", "a"), 0)  # info: its index unknown
    seen = [lost_answer, op(2, ("read",), 5, (10, "a"), 6)]
    assert check(JOBS, seen).ok
    never = [lost_answer, op(2, ("read",), 5, (0, None), 6)]
    assert check(JOBS, never).ok
    # but once seen, it cannot be unseen
    assert not check(JOBS, [*seen, op(2, ("read",), 7, (0, None), 8)]).ok
    cas_unknown = [op(1, ("write", "a"), 0, 10, 1), op(2, ("cas", 10, "b"), 2),
                   op(3, ("read",), 5, (11, "b"), 6)]
    assert check(JOBS, cas_unknown).ok


def test_keys_are_checked_apart() -> None:
    good = [op(1, ("write", "a"), 0, 10, 1, key="x"), op(2, ("read",), 2, (10, "a"), 3, key="x")]
    bad = [op(1, ("write", "a"), 0, 11, 1, key="y"), op(2, ("read",), 2, (0, None), 3, key="y")]
    result = check(JOBS, good + bad)
    assert not result.ok and list(result.bad_keys) == ["y"]


def test_evaluation_creates_are_idempotent_and_reads_see_them() -> None:
    h = [op(1, ("create", "pending"), 0, True, 2, key="e"),
         op(2, ("create", "pending"), 1, True, 3, key="e"),  # the same again: OK
         op(3, ("read",), 4, "pending", 5, key="e")]
    assert check(EVALUATIONS, h).ok
    refused = [op(1, ("create", "pending"), 0, True, 1, key="e"),
               op(2, ("create", "blocked"), 2, True, 3, key="e")]  # a different one accepted
    assert not check(EVALUATIONS, refused).ok
    assert check(EVALUATIONS, [refused[0], op(2, ("create", "blocked"), 2, False, 3,
                                              key="e")]).ok
    stale = [op(1, ("create", "pending"), 0, True, 1, key="e"),
             op(2, ("read",), 2, None, 3, key="e")]
    assert not check(EVALUATIONS, stale).ok


def test_evaluation_status_transitions_only_leave_an_open_status() -> None:
    """An Ack moves a pending evaluation to its outcome, once: a second
    Ack that succeeds after the first, an Ack of an absent one, or a read
    of the old status after an Ack completed fail; an unknown Ack may have
    moved it or not."""
    pending = evaluation_pb2.EVALUATION_STATUS_PENDING
    done = evaluation_pb2.EVALUATION_STATUS_COMPLETE
    failed = evaluation_pb2.EVALUATION_STATUS_FAILED
    created = op(1, ("create", pending), 0, True, 1, key="e")
    good = [created, op(2, ("ack", done), 2, True, 3, key="e"),
            op(1, ("create", pending), 4, False, 5, key="e"),  # now a different one
            op(3, ("read",), 6, done, 7, key="e")]
    assert check(EVALUATIONS, good).ok
    assert not check(EVALUATIONS, [created, op(2, ("ack", done), 2, True, 3, key="e"),
                                   op(3, ("ack", failed), 4, True, 5, key="e")]).ok
    assert not check(EVALUATIONS, [op(2, ("ack", done), 2, True, 3, key="e")]).ok
    assert not check(EVALUATIONS, [created, op(2, ("ack", done), 2, True, 3, key="e"),
                                   op(3, ("read",), 4, pending, 5, key="e")]).ok
    unknown = op(2, ("ack", done), 2, key="e")
    for seen in (pending, done):
        assert check(EVALUATIONS, [created, unknown, op(3, ("read",), 4, seen, 5, key="e")]).ok


def test_history_recording_and_a_long_history_stay_fast() -> None:
    t = iter(range(1_000_000))
    h = History(clock=lambda: float(next(t)))
    index = 0
    for i in range(300):  # 3 clients, overlapping in pairs
        a = h.invoke(i % 3, "j", ("write", f"v{i}"))
        b = h.invoke((i + 1) % 3, "j", ("read",))
        index += 1
        h.ok(a, index)
        h.ok(b, (index, f"v{i}"))
    c = h.invoke(0, "j", ("read",))
    h.close()
    assert h.counts() == {"ok": 600, "info": 1, "fail": 0}
    ok, steps = check_one(JOBS, sorted(h.ops, key=lambda o: o.call))
    assert ok and steps < 100_000
    assert c == 600


def test_the_search_is_bounded() -> None:
    h = [op(i, ("write", f"v{i}"), 0, 100 + i, 50) for i in range(12)]
    h.append(op(99, ("read",), 60, (1, "never"), 61))
    with pytest.raises(RuntimeError, match="exceeded"):
        check(JOBS, h, budget=1000)


class _Deadline(grpc.aio.AioRpcError):
    def __init__(self) -> None:
        super().__init__(grpc.StatusCode.DEADLINE_EXCEEDED, grpc.aio.Metadata(),
                         grpc.aio.Metadata(), "deadline")


class _Jobs:
    """RegisterJob's first call ends unknown (a deadline); the rest succeed."""

    def __init__(self) -> None:
        self.written: list[str] = []

    async def RegisterJob(self, request: object, timeout: float) -> object:  # noqa: ASYNC109
        self.written.append(request.job.id)  # type: ignore[attr-defined]
        if len(self.written) == 1:
            raise _Deadline()
        return state_pb2.RegisterJobResponse(job_modify_index=len(self.written))

    async def GetJob(self, request: object, timeout: float) -> object:  # noqa: ASYNC109
        return state_pb2.GetJobResponse()


async def test_bounded_job_clients_move_on_to_a_fresh_job_after_an_unknown_write() -> None:
    """A write that ended unknown leaves its job to that open operation, and
    the clients go on with the key's next job (before, they stopped: an
    hour's faults stopped every client and the soak's write record)."""
    stub = _Jobs()
    clients = JobClients(History(), ["lin-0"], random.Random(1), pause=0.0)
    await clients.run_client(0, stub, 0.05, reads=False, bounded=True)  # type: ignore[arg-type]
    assert stub.written[0] == "lin-0" and len(stub.written) > 2
    assert set(stub.written[1:]) == {"lin-0.1"}
    assert clients.key_now("lin-0") == "lin-0.1"
    ops = clients.history.ops
    assert [o.key for o in ops if o.unknown] == ["lin-0"]
    assert check(JOBS, ops).ok
