import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DeploymentStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DEPLOYMENT_STATUS_UNSPECIFIED: _ClassVar[DeploymentStatus]
    DEPLOYMENT_STATUS_RUNNING: _ClassVar[DeploymentStatus]
    DEPLOYMENT_STATUS_PAUSED: _ClassVar[DeploymentStatus]
    DEPLOYMENT_STATUS_FAILED: _ClassVar[DeploymentStatus]
    DEPLOYMENT_STATUS_SUCCESSFUL: _ClassVar[DeploymentStatus]
    DEPLOYMENT_STATUS_CANCELLED: _ClassVar[DeploymentStatus]
DEPLOYMENT_STATUS_UNSPECIFIED: DeploymentStatus
DEPLOYMENT_STATUS_RUNNING: DeploymentStatus
DEPLOYMENT_STATUS_PAUSED: DeploymentStatus
DEPLOYMENT_STATUS_FAILED: DeploymentStatus
DEPLOYMENT_STATUS_SUCCESSFUL: DeploymentStatus
DEPLOYMENT_STATUS_CANCELLED: DeploymentStatus

class DeploymentGroupState(_message.Message):
    __slots__ = ("auto_revert", "auto_promote", "promoted", "desired_canaries", "desired_total", "placed_canaries", "placed_allocs", "healthy_allocs", "unhealthy_allocs", "progress_deadline", "require_progress_by")
    AUTO_REVERT_FIELD_NUMBER: _ClassVar[int]
    AUTO_PROMOTE_FIELD_NUMBER: _ClassVar[int]
    PROMOTED_FIELD_NUMBER: _ClassVar[int]
    DESIRED_CANARIES_FIELD_NUMBER: _ClassVar[int]
    DESIRED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    PLACED_CANARIES_FIELD_NUMBER: _ClassVar[int]
    PLACED_ALLOCS_FIELD_NUMBER: _ClassVar[int]
    HEALTHY_ALLOCS_FIELD_NUMBER: _ClassVar[int]
    UNHEALTHY_ALLOCS_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_DEADLINE_FIELD_NUMBER: _ClassVar[int]
    REQUIRE_PROGRESS_BY_FIELD_NUMBER: _ClassVar[int]
    auto_revert: bool
    auto_promote: bool
    promoted: bool
    desired_canaries: int
    desired_total: int
    placed_canaries: _containers.RepeatedScalarFieldContainer[str]
    placed_allocs: int
    healthy_allocs: int
    unhealthy_allocs: int
    progress_deadline: _duration_pb2.Duration
    require_progress_by: _timestamp_pb2.Timestamp
    def __init__(self, auto_revert: _Optional[bool] = ..., auto_promote: _Optional[bool] = ..., promoted: _Optional[bool] = ..., desired_canaries: _Optional[int] = ..., desired_total: _Optional[int] = ..., placed_canaries: _Optional[_Iterable[str]] = ..., placed_allocs: _Optional[int] = ..., healthy_allocs: _Optional[int] = ..., unhealthy_allocs: _Optional[int] = ..., progress_deadline: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., require_progress_by: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Deployment(_message.Message):
    __slots__ = ("id", "namespace", "job_id", "job_version", "job_modify_index", "job_create_index", "task_groups", "status", "status_description", "create_index", "modify_index", "create_time", "modify_time")
    class TaskGroupsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: DeploymentGroupState
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[DeploymentGroupState, _Mapping]] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_VERSION_FIELD_NUMBER: _ClassVar[int]
    JOB_MODIFY_INDEX_FIELD_NUMBER: _ClassVar[int]
    JOB_CREATE_INDEX_FIELD_NUMBER: _ClassVar[int]
    TASK_GROUPS_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    STATUS_DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    CREATE_INDEX_FIELD_NUMBER: _ClassVar[int]
    MODIFY_INDEX_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    MODIFY_TIME_FIELD_NUMBER: _ClassVar[int]
    id: str
    namespace: str
    job_id: str
    job_version: int
    job_modify_index: int
    job_create_index: int
    task_groups: _containers.MessageMap[str, DeploymentGroupState]
    status: DeploymentStatus
    status_description: str
    create_index: int
    modify_index: int
    create_time: _timestamp_pb2.Timestamp
    modify_time: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., namespace: _Optional[str] = ..., job_id: _Optional[str] = ..., job_version: _Optional[int] = ..., job_modify_index: _Optional[int] = ..., job_create_index: _Optional[int] = ..., task_groups: _Optional[_Mapping[str, DeploymentGroupState]] = ..., status: _Optional[_Union[DeploymentStatus, str]] = ..., status_description: _Optional[str] = ..., create_index: _Optional[int] = ..., modify_index: _Optional[int] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., modify_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...
