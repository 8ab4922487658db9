import datetime

from drover.api.types.v1 import job_pb2 as _job_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AllocDesiredStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ALLOC_DESIRED_STATUS_UNSPECIFIED: _ClassVar[AllocDesiredStatus]
    ALLOC_DESIRED_STATUS_RUN: _ClassVar[AllocDesiredStatus]
    ALLOC_DESIRED_STATUS_STOP: _ClassVar[AllocDesiredStatus]
    ALLOC_DESIRED_STATUS_EVICT: _ClassVar[AllocDesiredStatus]

class AllocClientStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ALLOC_CLIENT_STATUS_UNSPECIFIED: _ClassVar[AllocClientStatus]
    ALLOC_CLIENT_STATUS_PENDING: _ClassVar[AllocClientStatus]
    ALLOC_CLIENT_STATUS_RUNNING: _ClassVar[AllocClientStatus]
    ALLOC_CLIENT_STATUS_COMPLETE: _ClassVar[AllocClientStatus]
    ALLOC_CLIENT_STATUS_FAILED: _ClassVar[AllocClientStatus]
    ALLOC_CLIENT_STATUS_LOST: _ClassVar[AllocClientStatus]
ALLOC_DESIRED_STATUS_UNSPECIFIED: AllocDesiredStatus
ALLOC_DESIRED_STATUS_RUN: AllocDesiredStatus
ALLOC_DESIRED_STATUS_STOP: AllocDesiredStatus
ALLOC_DESIRED_STATUS_EVICT: AllocDesiredStatus
ALLOC_CLIENT_STATUS_UNSPECIFIED: AllocClientStatus
ALLOC_CLIENT_STATUS_PENDING: AllocClientStatus
ALLOC_CLIENT_STATUS_RUNNING: AllocClientStatus
ALLOC_CLIENT_STATUS_COMPLETE: AllocClientStatus
ALLOC_CLIENT_STATUS_FAILED: AllocClientStatus
ALLOC_CLIENT_STATUS_LOST: AllocClientStatus

class AllocDeploymentStatus(_message.Message):
    __slots__ = ("healthy", "timestamp", "canary", "modify_index")
    HEALTHY_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    CANARY_FIELD_NUMBER: _ClassVar[int]
    MODIFY_INDEX_FIELD_NUMBER: _ClassVar[int]
    healthy: bool
    timestamp: _timestamp_pb2.Timestamp
    canary: bool
    modify_index: int
    def __init__(self, healthy: _Optional[bool] = ..., timestamp: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., canary: _Optional[bool] = ..., modify_index: _Optional[int] = ...) -> None: ...

class Allocation(_message.Message):
    __slots__ = ("id", "namespace", "name", "job_id", "job_version", "task_group", "node_id", "deployment_id", "eval_id", "desired_status", "desired_description", "client_status", "client_description", "deployment_status", "previous_allocation", "create_index", "modify_index", "create_time", "modify_time", "resources", "next_allocation", "reschedule_tracker", "followup_eval_id", "finished_at", "desired_transition")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_VERSION_FIELD_NUMBER: _ClassVar[int]
    TASK_GROUP_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_ID_FIELD_NUMBER: _ClassVar[int]
    EVAL_ID_FIELD_NUMBER: _ClassVar[int]
    DESIRED_STATUS_FIELD_NUMBER: _ClassVar[int]
    DESIRED_DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    CLIENT_STATUS_FIELD_NUMBER: _ClassVar[int]
    CLIENT_DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_STATUS_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_ALLOCATION_FIELD_NUMBER: _ClassVar[int]
    CREATE_INDEX_FIELD_NUMBER: _ClassVar[int]
    MODIFY_INDEX_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    MODIFY_TIME_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    NEXT_ALLOCATION_FIELD_NUMBER: _ClassVar[int]
    RESCHEDULE_TRACKER_FIELD_NUMBER: _ClassVar[int]
    FOLLOWUP_EVAL_ID_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    DESIRED_TRANSITION_FIELD_NUMBER: _ClassVar[int]
    id: str
    namespace: str
    name: str
    job_id: str
    job_version: int
    task_group: str
    node_id: str
    deployment_id: str
    eval_id: str
    desired_status: AllocDesiredStatus
    desired_description: str
    client_status: AllocClientStatus
    client_description: str
    deployment_status: AllocDeploymentStatus
    previous_allocation: str
    create_index: int
    modify_index: int
    create_time: _timestamp_pb2.Timestamp
    modify_time: _timestamp_pb2.Timestamp
    resources: _job_pb2.Resources
    next_allocation: str
    reschedule_tracker: RescheduleTracker
    followup_eval_id: str
    finished_at: _timestamp_pb2.Timestamp
    desired_transition: DesiredTransition
    def __init__(self, id: _Optional[str] = ..., namespace: _Optional[str] = ..., name: _Optional[str] = ..., job_id: _Optional[str] = ..., job_version: _Optional[int] = ..., task_group: _Optional[str] = ..., node_id: _Optional[str] = ..., deployment_id: _Optional[str] = ..., eval_id: _Optional[str] = ..., desired_status: _Optional[_Union[AllocDesiredStatus, str]] = ..., desired_description: _Optional[str] = ..., client_status: _Optional[_Union[AllocClientStatus, str]] = ..., client_description: _Optional[str] = ..., deployment_status: _Optional[_Union[AllocDeploymentStatus, _Mapping]] = ..., previous_allocation: _Optional[str] = ..., create_index: _Optional[int] = ..., modify_index: _Optional[int] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., modify_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., resources: _Optional[_Union[_job_pb2.Resources, _Mapping]] = ..., next_allocation: _Optional[str] = ..., reschedule_tracker: _Optional[_Union[RescheduleTracker, _Mapping]] = ..., followup_eval_id: _Optional[str] = ..., finished_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., desired_transition: _Optional[_Union[DesiredTransition, _Mapping]] = ...) -> None: ...

class RescheduleEvent(_message.Message):
    __slots__ = ("reschedule_time", "prev_alloc_id", "prev_node_id", "delay")
    RESCHEDULE_TIME_FIELD_NUMBER: _ClassVar[int]
    PREV_ALLOC_ID_FIELD_NUMBER: _ClassVar[int]
    PREV_NODE_ID_FIELD_NUMBER: _ClassVar[int]
    DELAY_FIELD_NUMBER: _ClassVar[int]
    reschedule_time: _timestamp_pb2.Timestamp
    prev_alloc_id: str
    prev_node_id: str
    delay: _duration_pb2.Duration
    def __init__(self, reschedule_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., prev_alloc_id: _Optional[str] = ..., prev_node_id: _Optional[str] = ..., delay: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class RescheduleTracker(_message.Message):
    __slots__ = ("events",)
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[RescheduleEvent]
    def __init__(self, events: _Optional[_Iterable[_Union[RescheduleEvent, _Mapping]]] = ...) -> None: ...

class DesiredTransition(_message.Message):
    __slots__ = ("migrate", "migrate_disable_placement", "reschedule")
    MIGRATE_FIELD_NUMBER: _ClassVar[int]
    MIGRATE_DISABLE_PLACEMENT_FIELD_NUMBER: _ClassVar[int]
    RESCHEDULE_FIELD_NUMBER: _ClassVar[int]
    migrate: bool
    migrate_disable_placement: bool
    reschedule: bool
    def __init__(self, migrate: _Optional[bool] = ..., migrate_disable_placement: _Optional[bool] = ..., reschedule: _Optional[bool] = ...) -> None: ...
