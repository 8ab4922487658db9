import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Server(_message.Message):
    __slots__ = ("address", "replica", "rpc_version", "healthy", "leader", "backup", "last_failure")
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    REPLICA_FIELD_NUMBER: _ClassVar[int]
    RPC_VERSION_FIELD_NUMBER: _ClassVar[int]
    HEALTHY_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    BACKUP_FIELD_NUMBER: _ClassVar[int]
    LAST_FAILURE_FIELD_NUMBER: _ClassVar[int]
    address: str
    replica: str
    rpc_version: int
    healthy: bool
    leader: bool
    backup: bool
    last_failure: _timestamp_pb2.Timestamp
    def __init__(self, address: _Optional[str] = ..., replica: _Optional[str] = ..., rpc_version: _Optional[int] = ..., healthy: _Optional[bool] = ..., leader: _Optional[bool] = ..., backup: _Optional[bool] = ..., last_failure: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ServerList(_message.Message):
    __slots__ = ("service", "servers", "next_rebalance")
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    SERVERS_FIELD_NUMBER: _ClassVar[int]
    NEXT_REBALANCE_FIELD_NUMBER: _ClassVar[int]
    service: str
    servers: _containers.RepeatedCompositeFieldContainer[Server]
    next_rebalance: _timestamp_pb2.Timestamp
    def __init__(self, service: _Optional[str] = ..., servers: _Optional[_Iterable[_Union[Server, _Mapping]]] = ..., next_rebalance: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListServersRequest(_message.Message):
    __slots__ = ("service",)
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    service: str
    def __init__(self, service: _Optional[str] = ...) -> None: ...

class ListServersResponse(_message.Message):
    __slots__ = ("lists", "revision", "proxies")
    LISTS_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    PROXIES_FIELD_NUMBER: _ClassVar[int]
    lists: _containers.RepeatedCompositeFieldContainer[ServerList]
    revision: int
    proxies: _containers.RepeatedCompositeFieldContainer[Server]
    def __init__(self, lists: _Optional[_Iterable[_Union[ServerList, _Mapping]]] = ..., revision: _Optional[int] = ..., proxies: _Optional[_Iterable[_Union[Server, _Mapping]]] = ...) -> None: ...

class RebalanceServersRequest(_message.Message):
    __slots__ = ("service",)
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    service: str
    def __init__(self, service: _Optional[str] = ...) -> None: ...

class RebalanceServersResponse(_message.Message):
    __slots__ = ("lists",)
    LISTS_FIELD_NUMBER: _ClassVar[int]
    lists: _containers.RepeatedCompositeFieldContainer[ServerList]
    def __init__(self, lists: _Optional[_Iterable[_Union[ServerList, _Mapping]]] = ...) -> None: ...

class WaitForConvergenceRequest(_message.Message):
    __slots__ = ("revision", "timeout")
    REVISION_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    revision: int
    timeout: _duration_pb2.Duration
    def __init__(self, revision: _Optional[int] = ..., timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class ReplicaRevision(_message.Message):
    __slots__ = ("replica", "address", "applied_revision")
    REPLICA_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    APPLIED_REVISION_FIELD_NUMBER: _ClassVar[int]
    replica: str
    address: str
    applied_revision: int
    def __init__(self, replica: _Optional[str] = ..., address: _Optional[str] = ..., applied_revision: _Optional[int] = ...) -> None: ...

class WaitForConvergenceResponse(_message.Message):
    __slots__ = ("converged", "replicas", "behind")
    CONVERGED_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    BEHIND_FIELD_NUMBER: _ClassVar[int]
    converged: bool
    replicas: _containers.RepeatedCompositeFieldContainer[ReplicaRevision]
    behind: _containers.RepeatedCompositeFieldContainer[ReplicaRevision]
    def __init__(self, converged: _Optional[bool] = ..., replicas: _Optional[_Iterable[_Union[ReplicaRevision, _Mapping]]] = ..., behind: _Optional[_Iterable[_Union[ReplicaRevision, _Mapping]]] = ...) -> None: ...
