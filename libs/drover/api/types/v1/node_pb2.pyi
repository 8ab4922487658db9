import datetime

from drover.api.types.v1 import job_pb2 as _job_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class NodeStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    NODE_STATUS_UNSPECIFIED: _ClassVar[NodeStatus]
    NODE_STATUS_INITIALIZING: _ClassVar[NodeStatus]
    NODE_STATUS_READY: _ClassVar[NodeStatus]
    NODE_STATUS_DOWN: _ClassVar[NodeStatus]
    NODE_STATUS_DISCONNECTED: _ClassVar[NodeStatus]

class NodeSchedulingEligibility(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    NODE_SCHEDULING_ELIGIBILITY_UNSPECIFIED: _ClassVar[NodeSchedulingEligibility]
    NODE_SCHEDULING_ELIGIBILITY_ELIGIBLE: _ClassVar[NodeSchedulingEligibility]
    NODE_SCHEDULING_ELIGIBILITY_INELIGIBLE: _ClassVar[NodeSchedulingEligibility]

class DrainStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DRAIN_STATUS_UNSPECIFIED: _ClassVar[DrainStatus]
    DRAIN_STATUS_DRAINING: _ClassVar[DrainStatus]
    DRAIN_STATUS_COMPLETE: _ClassVar[DrainStatus]
    DRAIN_STATUS_CANCELED: _ClassVar[DrainStatus]
NODE_STATUS_UNSPECIFIED: NodeStatus
NODE_STATUS_INITIALIZING: NodeStatus
NODE_STATUS_READY: NodeStatus
NODE_STATUS_DOWN: NodeStatus
NODE_STATUS_DISCONNECTED: NodeStatus
NODE_SCHEDULING_ELIGIBILITY_UNSPECIFIED: NodeSchedulingEligibility
NODE_SCHEDULING_ELIGIBILITY_ELIGIBLE: NodeSchedulingEligibility
NODE_SCHEDULING_ELIGIBILITY_INELIGIBLE: NodeSchedulingEligibility
DRAIN_STATUS_UNSPECIFIED: DrainStatus
DRAIN_STATUS_DRAINING: DrainStatus
DRAIN_STATUS_COMPLETE: DrainStatus
DRAIN_STATUS_CANCELED: DrainStatus

class Node(_message.Message):
    __slots__ = ("id", "name", "datacenter", "node_class", "address", "status", "scheduling_eligibility", "drain", "attributes", "create_index", "modify_index", "status_updated_at", "resources", "last_heartbeat", "status_description", "heartbeat_lease", "secret_sha256", "drain_strategy", "last_drain")
    class AttributesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DATACENTER_FIELD_NUMBER: _ClassVar[int]
    NODE_CLASS_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_ELIGIBILITY_FIELD_NUMBER: _ClassVar[int]
    DRAIN_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    CREATE_INDEX_FIELD_NUMBER: _ClassVar[int]
    MODIFY_INDEX_FIELD_NUMBER: _ClassVar[int]
    STATUS_UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    LAST_HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    STATUS_DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_LEASE_FIELD_NUMBER: _ClassVar[int]
    SECRET_SHA256_FIELD_NUMBER: _ClassVar[int]
    DRAIN_STRATEGY_FIELD_NUMBER: _ClassVar[int]
    LAST_DRAIN_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    datacenter: str
    node_class: str
    address: str
    status: NodeStatus
    scheduling_eligibility: NodeSchedulingEligibility
    drain: bool
    attributes: _containers.ScalarMap[str, str]
    create_index: int
    modify_index: int
    status_updated_at: _timestamp_pb2.Timestamp
    resources: _job_pb2.Resources
    last_heartbeat: _timestamp_pb2.Timestamp
    status_description: str
    heartbeat_lease: int
    secret_sha256: bytes
    drain_strategy: DrainStrategy
    last_drain: DrainMetadata
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., datacenter: _Optional[str] = ..., node_class: _Optional[str] = ..., address: _Optional[str] = ..., status: _Optional[_Union[NodeStatus, str]] = ..., scheduling_eligibility: _Optional[_Union[NodeSchedulingEligibility, str]] = ..., drain: _Optional[bool] = ..., attributes: _Optional[_Mapping[str, str]] = ..., create_index: _Optional[int] = ..., modify_index: _Optional[int] = ..., status_updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., resources: _Optional[_Union[_job_pb2.Resources, _Mapping]] = ..., last_heartbeat: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., status_description: _Optional[str] = ..., heartbeat_lease: _Optional[int] = ..., secret_sha256: _Optional[bytes] = ..., drain_strategy: _Optional[_Union[DrainStrategy, _Mapping]] = ..., last_drain: _Optional[_Union[DrainMetadata, _Mapping]] = ...) -> None: ...

class NodeUsage(_message.Message):
    __slots__ = ("node_id", "reserved", "allocations", "eval_id", "create_index", "modify_index")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    RESERVED_FIELD_NUMBER: _ClassVar[int]
    ALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    EVAL_ID_FIELD_NUMBER: _ClassVar[int]
    CREATE_INDEX_FIELD_NUMBER: _ClassVar[int]
    MODIFY_INDEX_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    reserved: _job_pb2.Resources
    allocations: int
    eval_id: str
    create_index: int
    modify_index: int
    def __init__(self, node_id: _Optional[str] = ..., reserved: _Optional[_Union[_job_pb2.Resources, _Mapping]] = ..., allocations: _Optional[int] = ..., eval_id: _Optional[str] = ..., create_index: _Optional[int] = ..., modify_index: _Optional[int] = ...) -> None: ...

class DrainStrategy(_message.Message):
    __slots__ = ("deadline", "ignore_system_jobs", "force_deadline", "started_at", "force")
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    IGNORE_SYSTEM_JOBS_FIELD_NUMBER: _ClassVar[int]
    FORCE_DEADLINE_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    deadline: _duration_pb2.Duration
    ignore_system_jobs: bool
    force_deadline: _timestamp_pb2.Timestamp
    started_at: _timestamp_pb2.Timestamp
    force: bool
    def __init__(self, deadline: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., ignore_system_jobs: _Optional[bool] = ..., force_deadline: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., force: _Optional[bool] = ...) -> None: ...

class DrainMetadata(_message.Message):
    __slots__ = ("status", "started_at", "updated_at", "deadlined")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    DEADLINED_FIELD_NUMBER: _ClassVar[int]
    status: DrainStatus
    started_at: _timestamp_pb2.Timestamp
    updated_at: _timestamp_pb2.Timestamp
    deadlined: bool
    def __init__(self, status: _Optional[_Union[DrainStatus, str]] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., deadlined: _Optional[bool] = ...) -> None: ...
