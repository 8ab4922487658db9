import datetime

from drover.api.types.v1 import job_pb2 as _job_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EvaluationStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EVALUATION_STATUS_UNSPECIFIED: _ClassVar[EvaluationStatus]
    EVALUATION_STATUS_BLOCKED: _ClassVar[EvaluationStatus]
    EVALUATION_STATUS_PENDING: _ClassVar[EvaluationStatus]
    EVALUATION_STATUS_COMPLETE: _ClassVar[EvaluationStatus]
    EVALUATION_STATUS_FAILED: _ClassVar[EvaluationStatus]
    EVALUATION_STATUS_CANCELED: _ClassVar[EvaluationStatus]
EVALUATION_STATUS_UNSPECIFIED: EvaluationStatus
EVALUATION_STATUS_BLOCKED: EvaluationStatus
EVALUATION_STATUS_PENDING: EvaluationStatus
EVALUATION_STATUS_COMPLETE: EvaluationStatus
EVALUATION_STATUS_FAILED: EvaluationStatus
EVALUATION_STATUS_CANCELED: EvaluationStatus

class Evaluation(_message.Message):
    __slots__ = ("id", "namespace", "priority", "type", "triggered_by", "job_id", "job_modify_index", "deployment_id", "node_id", "status", "status_description", "wait_until", "previous_eval", "next_eval", "blocked_eval", "create_index", "modify_index", "create_time", "modify_time", "snapshot_index", "blocked_datacenters", "blocked_ask")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TRIGGERED_BY_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_MODIFY_INDEX_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    STATUS_DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    WAIT_UNTIL_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_EVAL_FIELD_NUMBER: _ClassVar[int]
    NEXT_EVAL_FIELD_NUMBER: _ClassVar[int]
    BLOCKED_EVAL_FIELD_NUMBER: _ClassVar[int]
    CREATE_INDEX_FIELD_NUMBER: _ClassVar[int]
    MODIFY_INDEX_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    MODIFY_TIME_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_INDEX_FIELD_NUMBER: _ClassVar[int]
    BLOCKED_DATACENTERS_FIELD_NUMBER: _ClassVar[int]
    BLOCKED_ASK_FIELD_NUMBER: _ClassVar[int]
    id: str
    namespace: str
    priority: int
    type: str
    triggered_by: str
    job_id: str
    job_modify_index: int
    deployment_id: str
    node_id: str
    status: EvaluationStatus
    status_description: str
    wait_until: _timestamp_pb2.Timestamp
    previous_eval: str
    next_eval: str
    blocked_eval: str
    create_index: int
    modify_index: int
    create_time: _timestamp_pb2.Timestamp
    modify_time: _timestamp_pb2.Timestamp
    snapshot_index: int
    blocked_datacenters: _containers.RepeatedScalarFieldContainer[str]
    blocked_ask: _job_pb2.Resources
    def __init__(self, id: _Optional[str] = ..., namespace: _Optional[str] = ..., priority: _Optional[int] = ..., type: _Optional[str] = ..., triggered_by: _Optional[str] = ..., job_id: _Optional[str] = ..., job_modify_index: _Optional[int] = ..., deployment_id: _Optional[str] = ..., node_id: _Optional[str] = ..., status: _Optional[_Union[EvaluationStatus, str]] = ..., status_description: _Optional[str] = ..., wait_until: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., previous_eval: _Optional[str] = ..., next_eval: _Optional[str] = ..., blocked_eval: _Optional[str] = ..., create_index: _Optional[int] = ..., modify_index: _Optional[int] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., modify_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., snapshot_index: _Optional[int] = ..., blocked_datacenters: _Optional[_Iterable[str]] = ..., blocked_ask: _Optional[_Union[_job_pb2.Resources, _Mapping]] = ...) -> None: ...
