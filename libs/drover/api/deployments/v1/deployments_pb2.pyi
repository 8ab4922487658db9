from drover.api.types.v1 import deployment_pb2 as _deployment_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DeploymentUpdateResult(_message.Message):
    __slots__ = ("eval_id", "reverted_job_version", "deployment", "index")
    EVAL_ID_FIELD_NUMBER: _ClassVar[int]
    REVERTED_JOB_VERSION_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    eval_id: str
    reverted_job_version: int
    deployment: _deployment_pb2.Deployment
    index: int
    def __init__(self, eval_id: _Optional[str] = ..., reverted_job_version: _Optional[int] = ..., deployment: _Optional[_Union[_deployment_pb2.Deployment, _Mapping]] = ..., index: _Optional[int] = ...) -> None: ...

class PromoteDeploymentRequest(_message.Message):
    __slots__ = ("namespace", "deployment_id", "all", "groups")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_ID_FIELD_NUMBER: _ClassVar[int]
    ALL_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    deployment_id: str
    all: bool
    groups: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, namespace: _Optional[str] = ..., deployment_id: _Optional[str] = ..., all: _Optional[bool] = ..., groups: _Optional[_Iterable[str]] = ...) -> None: ...

class PromoteDeploymentResponse(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: DeploymentUpdateResult
    def __init__(self, result: _Optional[_Union[DeploymentUpdateResult, _Mapping]] = ...) -> None: ...

class PauseDeploymentRequest(_message.Message):
    __slots__ = ("namespace", "deployment_id", "pause")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_ID_FIELD_NUMBER: _ClassVar[int]
    PAUSE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    deployment_id: str
    pause: bool
    def __init__(self, namespace: _Optional[str] = ..., deployment_id: _Optional[str] = ..., pause: _Optional[bool] = ...) -> None: ...

class PauseDeploymentResponse(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: DeploymentUpdateResult
    def __init__(self, result: _Optional[_Union[DeploymentUpdateResult, _Mapping]] = ...) -> None: ...

class FailDeploymentRequest(_message.Message):
    __slots__ = ("namespace", "deployment_id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    deployment_id: str
    def __init__(self, namespace: _Optional[str] = ..., deployment_id: _Optional[str] = ...) -> None: ...

class FailDeploymentResponse(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: DeploymentUpdateResult
    def __init__(self, result: _Optional[_Union[DeploymentUpdateResult, _Mapping]] = ...) -> None: ...

class SetAllocHealthRequest(_message.Message):
    __slots__ = ("namespace", "deployment_id", "healthy_allocation_ids", "unhealthy_allocation_ids")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_ID_FIELD_NUMBER: _ClassVar[int]
    HEALTHY_ALLOCATION_IDS_FIELD_NUMBER: _ClassVar[int]
    UNHEALTHY_ALLOCATION_IDS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    deployment_id: str
    healthy_allocation_ids: _containers.RepeatedScalarFieldContainer[str]
    unhealthy_allocation_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, namespace: _Optional[str] = ..., deployment_id: _Optional[str] = ..., healthy_allocation_ids: _Optional[_Iterable[str]] = ..., unhealthy_allocation_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class SetAllocHealthResponse(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: DeploymentUpdateResult
    def __init__(self, result: _Optional[_Union[DeploymentUpdateResult, _Mapping]] = ...) -> None: ...

class GetWatcherStatsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetWatcherStatsResponse(_message.Message):
    __slots__ = ("active_watchers", "subscriptions", "wakeups", "evaluations_created", "state_writes", "leader")
    ACTIVE_WATCHERS_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIPTIONS_FIELD_NUMBER: _ClassVar[int]
    WAKEUPS_FIELD_NUMBER: _ClassVar[int]
    EVALUATIONS_CREATED_FIELD_NUMBER: _ClassVar[int]
    STATE_WRITES_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    active_watchers: int
    subscriptions: int
    wakeups: int
    evaluations_created: int
    state_writes: int
    leader: bool
    def __init__(self, active_watchers: _Optional[int] = ..., subscriptions: _Optional[int] = ..., wakeups: _Optional[int] = ..., evaluations_created: _Optional[int] = ..., state_writes: _Optional[int] = ..., leader: _Optional[bool] = ...) -> None: ...

class CollectGarbageRequest(_message.Message):
    __slots__ = ("force",)
    FORCE_FIELD_NUMBER: _ClassVar[int]
    force: bool
    def __init__(self, force: _Optional[bool] = ...) -> None: ...

class CollectGarbageResponse(_message.Message):
    __slots__ = ("evaluations", "allocations", "deployments", "jobs", "job_versions", "nodes", "examined", "txns", "largest_txn", "duration_seconds")
    EVALUATIONS_FIELD_NUMBER: _ClassVar[int]
    ALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENTS_FIELD_NUMBER: _ClassVar[int]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    JOB_VERSIONS_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    EXAMINED_FIELD_NUMBER: _ClassVar[int]
    TXNS_FIELD_NUMBER: _ClassVar[int]
    LARGEST_TXN_FIELD_NUMBER: _ClassVar[int]
    DURATION_SECONDS_FIELD_NUMBER: _ClassVar[int]
    evaluations: int
    allocations: int
    deployments: int
    jobs: int
    job_versions: int
    nodes: int
    examined: int
    txns: int
    largest_txn: int
    duration_seconds: float
    def __init__(self, evaluations: _Optional[int] = ..., allocations: _Optional[int] = ..., deployments: _Optional[int] = ..., jobs: _Optional[int] = ..., job_versions: _Optional[int] = ..., nodes: _Optional[int] = ..., examined: _Optional[int] = ..., txns: _Optional[int] = ..., largest_txn: _Optional[int] = ..., duration_seconds: _Optional[float] = ...) -> None: ...
