"""A conflict with the caller's own precondition still fails: two
registrations of one job with the same ``--check-index`` race on two
replicas over real etcd; the state service retries its own conflicts, so
exactly one wins and the other is refused JOB_MODIFY_INDEX_MISMATCH (it is
never re-planned into a success, nor answered ABORTED)."""

from __future__ import annotations

import asyncio

import grpc

from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import job_pb2
from drover.rpc.remote import error_info


def _job(image: str) -> job_pb2.Job:
    task = job_pb2.Task(name="t", driver="docker", config={"image": image})
    return job_pb2.Job(id="ci", datacenters=["dc1"], type=job_pb2.JOB_TYPE_BATCH,
                       task_groups=[job_pb2.TaskGroup(name="g", count=1, tasks=[task])])


async def test_racing_check_index_registrations_one_wins_one_is_refused(
        replica, replica2) -> None:
    first = await replica.stub.RegisterJob(state_pb2.RegisterJobRequest(job=_job("v0")))
    for round_ in range(5):
        index = first.job_modify_index
        outcomes = await asyncio.gather(*(
            r.stub.RegisterJob(state_pb2.RegisterJobRequest(
                job=_job(f"v{round_}-{n}"), enforce_index=True, job_modify_index=index))
            for n, r in enumerate((replica, replica2))), return_exceptions=True)
        won = [o for o in outcomes if not isinstance(o, BaseException)]
        lost = [o for o in outcomes if isinstance(o, BaseException)]
        assert len(won) == 1 and len(lost) == 1, outcomes
        [err] = lost
        assert isinstance(err, grpc.aio.AioRpcError)
        assert err.code() == grpc.StatusCode.FAILED_PRECONDITION, err
        info = error_info(err)
        assert info is not None and info.reason == "JOB_MODIFY_INDEX_MISMATCH", err
        first = won[0]
