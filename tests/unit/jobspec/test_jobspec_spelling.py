"""Job specs read the enum words users write, in YAML and JSON alike."""

from __future__ import annotations

import json

import pytest
import yaml
from google.protobuf import json_format

from drover.api.types.v1 import job_pb2
from drover.jobspec.spelling import parse_spec

YAML = """
id: web
type: service
datacenters: [dc1]
task_groups:
  - name: web
    count: 2
"""


def test_yaml_and_json_accept_short_enum_names() -> None:
    from_yaml = parse_spec(yaml.safe_load(YAML), job_pb2.Job())
    assert from_yaml.type == job_pb2.JOB_TYPE_SERVICE
    from_json = parse_spec(json.loads('{"id": "b", "type": "Batch", "status": "dead"}'),
                           job_pb2.Job())
    assert from_json.type == job_pb2.JOB_TYPE_BATCH
    assert from_json.status == job_pb2.JOB_STATUS_DEAD


def test_proto_names_and_numbers_still_work() -> None:
    job = parse_spec({"type": "JOB_TYPE_SYSTEM"}, job_pb2.Job())
    assert job.type == job_pb2.JOB_TYPE_SYSTEM
    assert parse_spec({"type": 2}, job_pb2.Job()).type == job_pb2.JOB_TYPE_BATCH


def test_unknown_words_are_reported_by_the_parser() -> None:
    with pytest.raises(json_format.ParseError, match="nope"):
        parse_spec({"type": "nope"}, job_pb2.Job())


def test_durations_as_people_write_them() -> None:
    from google.protobuf import json_format

    from drover.api.types.v1 import job_pb2
    from drover.jobspec.spelling import parse_spec

    job = parse_spec({"id": "web", "taskGroups": [{"name": "g", "update": {
        "healthyDeadline": "5m", "progressDeadline": "1h30m", "minHealthyTime": "10s"}}]},
        job_pb2.Job())
    update = job.task_groups[0].update
    assert update.healthy_deadline.seconds == 300
    assert update.progress_deadline.seconds == 5400
    assert update.min_healthy_time.seconds == 10
    half = parse_spec({"taskGroups": [{"name": "g", "update": {"minHealthyTime": "500ms"}}]},
                      job_pb2.Job())
    assert half.task_groups[0].update.min_healthy_time.nanos == 500_000_000
    try:
        parse_spec({"taskGroups": [{"name": "g", "update": {"healthyDeadline": "5 fortnights"}}]},
                   job_pb2.Job())
    except json_format.ParseError as e:
        assert "not a duration" in str(e) and "15m" in str(e)
    else:
        raise AssertionError("a bad duration was accepted")


def test_reschedule_block_reads_with_nomads_names_and_durations() -> None:
    spec = {"id": "j", "task_groups": [{"name": "g", "reschedule": {
        "attempts": 3, "interval": "1h", "delay": "10s", "delay_function": "fibonacci",
        "max_delay": "5m", "unlimited": False}}]}
    r = parse_spec(spec, job_pb2.Job()).task_groups[0].reschedule
    assert (r.attempts, r.interval.seconds, r.delay.seconds, r.delay_function,
            r.max_delay.seconds, r.unlimited) == (3, 3600, 10, "fibonacci", 300, False)
    assert r.HasField("unlimited")  # set to false, not left to the default
    bare = parse_spec({"id": "j", "task_groups": [{"name": "g", "reschedule": {}}]},
                      job_pb2.Job()).task_groups[0].reschedule
    assert not bare.HasField("attempts") and not bare.HasField("delay")
