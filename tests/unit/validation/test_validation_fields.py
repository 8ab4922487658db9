"""The pure request checks: every kind of unusable value is refused with
the field's path, and ordinary requests pass untouched."""

from __future__ import annotations

from typing import cast

import pytest

from drover.api.broker.v1 import broker_pb2
from drover.api.state.v1 import state_pb2
from drover.api.types.v1 import job_pb2, query_pb2
from drover.api.types.v1.evaluation_pb2 import EvaluationStatus
from drover.errors import InvalidArgument
from drover.validation import check_request


def refused(request: object) -> InvalidArgument:
    with pytest.raises(InvalidArgument) as info:
        check_request(request)
    return info.value


def test_ordinary_requests_pass() -> None:
    job = job_pb2.Job(id="web", namespace="default", type=job_pb2.JOB_TYPE_SERVICE,
                      datacenters=["dc1"], meta={"owner": "team a"})
    job.task_groups.add(name="web", count=3).tasks.add(name="t", driver="exec",
                                                       config={"cmd": "x" * 1000})
    check_request(state_pb2.RegisterJobRequest(job=job))
    check_request(state_pb2.ListEvaluationsRequest(namespace="*", filter='status == "pending"',
                                                   query=query_pb2.QueryOptions(min_index=5)))
    check_request(b"raw bytes are the decoding service's business")


def test_undefined_enum_number_names_the_field() -> None:
    err = refused(broker_pb2.AckBatchRequest(acks=[
        broker_pb2.AckRequest(eval_id="a"),
        broker_pb2.AckRequest(eval_id="b", status=cast(EvaluationStatus, 99))]))  # undefined
    assert err.metadata["field"] == "acks[1].status"
    assert "EvaluationStatus" in err.message
    assert refused(state_pb2.SubscribeRequest(
        topics=[state_pb2.TOPIC_JOB, cast(state_pb2.Topic, 42)])).metadata["field"] == "topics[1]"


@pytest.mark.parametrize("seconds,nanos", [
    (315_576_000_001, 0), (-1, 0), (0, -5), (5, -1), (1, 1_000_000_000),
])
def test_durations_out_of_range_or_negative(seconds: int, nanos: int) -> None:
    req = broker_pb2.DequeueRequest()
    req.timeout.seconds, req.timeout.nanos = seconds, nanos
    assert refused(req).metadata["field"] == "timeout"


def test_timestamps_outside_years_1_to_9999() -> None:
    req = state_pb2.UpsertEvaluationsRequest()
    req.evaluations.add(id="e").wait_until.seconds = 253_402_300_800
    assert refused(req).metadata["field"] == "evaluations[0].wait_until"


def test_indexes_beyond_int64_and_negative_counts() -> None:
    req = state_pb2.CountEvaluationsRequest(query=query_pb2.QueryOptions(min_index=2**64 - 1))
    assert refused(req).metadata["field"] == "query.min_index"
    assert refused(state_pb2.ListJobsRequest(page_size=-1)).metadata["field"] == "page_size"
    job = job_pb2.Job(id="j")
    job.task_groups.add(name="g", count=-2)
    assert refused(state_pb2.RegisterJobRequest(job=job)).metadata["field"] == \
        "job.task_groups[0].count"


def test_ids_and_strings_are_capped_and_never_echoed_whole() -> None:
    err = refused(state_pb2.GetJobRequest(id="x" * 1_000_000))
    assert err.metadata["field"] == "id"
    assert len(err.message) < 300
    assert refused(state_pb2.GetJobRequest(id="no spaces")).metadata["field"] == "id"
    assert refused(state_pb2.ListJobsRequest(namespace="a/b")).metadata["field"] == "namespace"
    check_request(state_pb2.ListJobsRequest(namespace="*"))
    err = refused(state_pb2.ListEvaluationsRequest(filter="a" * 5000))
    assert err.metadata["field"] == "filter" and len(err.message) < 300


def test_repeated_and_map_caps() -> None:
    err = refused(state_pb2.SubscribeRequest(keys=["k"] * 2000))
    assert (err.metadata["field"], err.metadata["max_entries"]) == ("keys", "1024")
    job = job_pb2.Job(id="j", meta={str(i): "v" for i in range(1100)})
    err = refused(state_pb2.RegisterJobRequest(job=job))
    assert (err.metadata["field"], err.metadata["max_entries"]) == ("job.meta", "1024")
    # A plan's maps take as many entries as its lists (a worker splits to it).
    check_request(state_pb2.SubmitPlanRequest(node_indexes={f"n{i}": 1 for i in range(1024)}))
    err = refused(state_pb2.SubmitPlanRequest(node_indexes={f"n{i}": 1 for i in range(1025)}))
    assert (err.metadata["field"], err.metadata["max_entries"]) == ("node_indexes", "1024")
    job = job_pb2.Job(id="j", meta={"k": "v" * 20_000})
    assert refused(state_pb2.RegisterJobRequest(job=job)).metadata["field"] == "job.meta['k']"


def test_documents_get_a_larger_cap_than_other_strings() -> None:
    from drover.api.acl.v1 import acl_pb2

    check_request(acl_pb2.ApplyPolicyRequest(name="p", rules="x" * 20_000))
    err = refused(acl_pb2.ApplyPolicyRequest(name="p", rules="x" * 70_000))
    assert err.metadata["field"] == "rules"
    assert refused(acl_pb2.ApplyPolicyRequest(name="p", description="x" * 20_000)
                   ).metadata["field"] == "description"


def test_the_compiled_walk_names_nested_map_and_well_known_paths() -> None:
    """The walk is compiled per message type (hot: every request): paths
    through map values, repeated messages and well-known types still name
    the field, and valid values of each kind pass."""
    from drover.api.types.v1 import deployment_pb2, evaluation_pb2

    req = state_pb2.UpdateDeploymentRequest(
        deployment=deployment_pb2.Deployment(id="d1", namespace="default"))
    group = req.deployment.task_groups["web"]
    group.placed_canaries.append("a1")
    group.progress_deadline.FromSeconds(30)
    group.require_progress_by.GetCurrentTime()
    check_request(req)
    group.healthy_allocs = -1
    assert refused(req).metadata["field"] == "deployment.task_groups['web'].healthy_allocs"
    group.healthy_allocs = 0
    group.placed_canaries.append("not an id")
    assert refused(req).metadata["field"] == \
        "deployment.task_groups['web'].placed_canaries[1]"
    del group.placed_canaries[1]
    group.progress_deadline.seconds = -5
    assert refused(req).metadata["field"] == "deployment.task_groups['web'].progress_deadline"
    ok = [evaluation_pb2.Evaluation(id=f"e{i}", namespace="*" if i else "default",
                                    priority=100, modify_index=2**63 - 1) for i in range(3)]
    check_request(state_pb2.UpsertEvaluationsRequest(evaluations=ok))
    bad = [*ok, evaluation_pb2.Evaluation(id="e9", priority=101)]
    assert refused(state_pb2.UpsertEvaluationsRequest(evaluations=bad)).metadata["field"] == \
        "evaluations[3].priority"
    bad[3] = evaluation_pb2.Evaluation(id="e9", modify_index=2**63)
    assert refused(state_pb2.UpsertEvaluationsRequest(evaluations=bad)).metadata["field"] == \
        "evaluations[3].modify_index"
