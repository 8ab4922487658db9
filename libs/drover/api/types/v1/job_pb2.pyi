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

class JobType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    JOB_TYPE_UNSPECIFIED: _ClassVar[JobType]
    JOB_TYPE_SERVICE: _ClassVar[JobType]
    JOB_TYPE_BATCH: _ClassVar[JobType]
    JOB_TYPE_SYSTEM: _ClassVar[JobType]

class JobStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    JOB_STATUS_UNSPECIFIED: _ClassVar[JobStatus]
    JOB_STATUS_PENDING: _ClassVar[JobStatus]
    JOB_STATUS_RUNNING: _ClassVar[JobStatus]
    JOB_STATUS_DEAD: _ClassVar[JobStatus]
JOB_TYPE_UNSPECIFIED: JobType
JOB_TYPE_SERVICE: JobType
JOB_TYPE_BATCH: JobType
JOB_TYPE_SYSTEM: JobType
JOB_STATUS_UNSPECIFIED: JobStatus
JOB_STATUS_PENDING: JobStatus
JOB_STATUS_RUNNING: JobStatus
JOB_STATUS_DEAD: JobStatus

class UpdateStrategy(_message.Message):
    __slots__ = ("max_parallel", "canary", "min_healthy_time", "healthy_deadline", "progress_deadline", "auto_revert", "auto_promote")
    MAX_PARALLEL_FIELD_NUMBER: _ClassVar[int]
    CANARY_FIELD_NUMBER: _ClassVar[int]
    MIN_HEALTHY_TIME_FIELD_NUMBER: _ClassVar[int]
    HEALTHY_DEADLINE_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_DEADLINE_FIELD_NUMBER: _ClassVar[int]
    AUTO_REVERT_FIELD_NUMBER: _ClassVar[int]
    AUTO_PROMOTE_FIELD_NUMBER: _ClassVar[int]
    max_parallel: int
    canary: int
    min_healthy_time: _duration_pb2.Duration
    healthy_deadline: _duration_pb2.Duration
    progress_deadline: _duration_pb2.Duration
    auto_revert: bool
    auto_promote: bool
    def __init__(self, max_parallel: _Optional[int] = ..., canary: _Optional[int] = ..., min_healthy_time: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., healthy_deadline: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., progress_deadline: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., auto_revert: _Optional[bool] = ..., auto_promote: _Optional[bool] = ...) -> None: ...

class Resources(_message.Message):
    __slots__ = ("cpu", "memory_mb")
    CPU_FIELD_NUMBER: _ClassVar[int]
    MEMORY_MB_FIELD_NUMBER: _ClassVar[int]
    cpu: int
    memory_mb: int
    def __init__(self, cpu: _Optional[int] = ..., memory_mb: _Optional[int] = ...) -> None: ...

class Task(_message.Message):
    __slots__ = ("name", "driver", "config", "resources", "meta")
    class ConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class MetaEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    DRIVER_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    name: str
    driver: str
    config: _containers.ScalarMap[str, str]
    resources: Resources
    meta: _containers.ScalarMap[str, str]
    def __init__(self, name: _Optional[str] = ..., driver: _Optional[str] = ..., config: _Optional[_Mapping[str, str]] = ..., resources: _Optional[_Union[Resources, _Mapping]] = ..., meta: _Optional[_Mapping[str, str]] = ...) -> None: ...

class TaskGroup(_message.Message):
    __slots__ = ("name", "count", "update", "tasks", "meta", "reschedule", "migrate")
    class MetaEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    UPDATE_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    RESCHEDULE_FIELD_NUMBER: _ClassVar[int]
    MIGRATE_FIELD_NUMBER: _ClassVar[int]
    name: str
    count: int
    update: UpdateStrategy
    tasks: _containers.RepeatedCompositeFieldContainer[Task]
    meta: _containers.ScalarMap[str, str]
    reschedule: ReschedulePolicy
    migrate: MigrateStrategy
    def __init__(self, name: _Optional[str] = ..., count: _Optional[int] = ..., update: _Optional[_Union[UpdateStrategy, _Mapping]] = ..., tasks: _Optional[_Iterable[_Union[Task, _Mapping]]] = ..., meta: _Optional[_Mapping[str, str]] = ..., reschedule: _Optional[_Union[ReschedulePolicy, _Mapping]] = ..., migrate: _Optional[_Union[MigrateStrategy, _Mapping]] = ...) -> None: ...

class Job(_message.Message):
    __slots__ = ("id", "namespace", "name", "type", "priority", "datacenters", "task_groups", "version", "stable", "stop", "status", "status_description", "meta", "create_index", "modify_index", "job_modify_index", "submit_time", "summary", "purge_requested")
    class MetaEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class SummaryEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: TaskGroupSummary
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[TaskGroupSummary, _Mapping]] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    DATACENTERS_FIELD_NUMBER: _ClassVar[int]
    TASK_GROUPS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    STABLE_FIELD_NUMBER: _ClassVar[int]
    STOP_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    STATUS_DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    CREATE_INDEX_FIELD_NUMBER: _ClassVar[int]
    MODIFY_INDEX_FIELD_NUMBER: _ClassVar[int]
    JOB_MODIFY_INDEX_FIELD_NUMBER: _ClassVar[int]
    SUBMIT_TIME_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    PURGE_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    id: str
    namespace: str
    name: str
    type: JobType
    priority: int
    datacenters: _containers.RepeatedScalarFieldContainer[str]
    task_groups: _containers.RepeatedCompositeFieldContainer[TaskGroup]
    version: int
    stable: bool
    stop: bool
    status: JobStatus
    status_description: str
    meta: _containers.ScalarMap[str, str]
    create_index: int
    modify_index: int
    job_modify_index: int
    submit_time: _timestamp_pb2.Timestamp
    summary: _containers.MessageMap[str, TaskGroupSummary]
    purge_requested: bool
    def __init__(self, id: _Optional[str] = ..., namespace: _Optional[str] = ..., name: _Optional[str] = ..., type: _Optional[_Union[JobType, str]] = ..., priority: _Optional[int] = ..., datacenters: _Optional[_Iterable[str]] = ..., task_groups: _Optional[_Iterable[_Union[TaskGroup, _Mapping]]] = ..., version: _Optional[int] = ..., stable: _Optional[bool] = ..., stop: _Optional[bool] = ..., status: _Optional[_Union[JobStatus, str]] = ..., status_description: _Optional[str] = ..., meta: _Optional[_Mapping[str, str]] = ..., create_index: _Optional[int] = ..., modify_index: _Optional[int] = ..., job_modify_index: _Optional[int] = ..., submit_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., summary: _Optional[_Mapping[str, TaskGroupSummary]] = ..., purge_requested: _Optional[bool] = ...) -> None: ...

class TaskGroupSummary(_message.Message):
    __slots__ = ("queued", "starting", "running", "failed", "complete", "lost")
    QUEUED_FIELD_NUMBER: _ClassVar[int]
    STARTING_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    COMPLETE_FIELD_NUMBER: _ClassVar[int]
    LOST_FIELD_NUMBER: _ClassVar[int]
    queued: int
    starting: int
    running: int
    failed: int
    complete: int
    lost: int
    def __init__(self, queued: _Optional[int] = ..., starting: _Optional[int] = ..., running: _Optional[int] = ..., failed: _Optional[int] = ..., complete: _Optional[int] = ..., lost: _Optional[int] = ...) -> None: ...

class ReschedulePolicy(_message.Message):
    __slots__ = ("attempts", "interval", "delay", "delay_function", "max_delay", "unlimited")
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_FIELD_NUMBER: _ClassVar[int]
    DELAY_FIELD_NUMBER: _ClassVar[int]
    DELAY_FUNCTION_FIELD_NUMBER: _ClassVar[int]
    MAX_DELAY_FIELD_NUMBER: _ClassVar[int]
    UNLIMITED_FIELD_NUMBER: _ClassVar[int]
    attempts: int
    interval: _duration_pb2.Duration
    delay: _duration_pb2.Duration
    delay_function: str
    max_delay: _duration_pb2.Duration
    unlimited: bool
    def __init__(self, attempts: _Optional[int] = ..., interval: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., delay: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., delay_function: _Optional[str] = ..., max_delay: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., unlimited: _Optional[bool] = ...) -> None: ...

class MigrateStrategy(_message.Message):
    __slots__ = ("max_parallel", "health_check", "min_healthy_time", "healthy_deadline")
    MAX_PARALLEL_FIELD_NUMBER: _ClassVar[int]
    HEALTH_CHECK_FIELD_NUMBER: _ClassVar[int]
    MIN_HEALTHY_TIME_FIELD_NUMBER: _ClassVar[int]
    HEALTHY_DEADLINE_FIELD_NUMBER: _ClassVar[int]
    max_parallel: int
    health_check: str
    min_healthy_time: _duration_pb2.Duration
    healthy_deadline: _duration_pb2.Duration
    def __init__(self, max_parallel: _Optional[int] = ..., health_check: _Optional[str] = ..., min_healthy_time: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., healthy_deadline: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...
