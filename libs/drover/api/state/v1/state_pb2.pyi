import datetime

from drover.api.types.v1 import allocation_pb2 as _allocation_pb2
from drover.api.types.v1 import deployment_pb2 as _deployment_pb2
from drover.api.types.v1 import evaluation_pb2 as _evaluation_pb2
from drover.api.types.v1 import job_pb2 as _job_pb2
from drover.api.types.v1 import node_pb2 as _node_pb2
from drover.api.types.v1 import query_pb2 as _query_pb2
from drover.api.types.v1 import scheduler_pb2 as _scheduler_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Topic(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TOPIC_UNSPECIFIED: _ClassVar[Topic]
    TOPIC_JOB: _ClassVar[Topic]
    TOPIC_EVALUATION: _ClassVar[Topic]
    TOPIC_DEPLOYMENT: _ClassVar[Topic]
    TOPIC_ALLOCATION: _ClassVar[Topic]
    TOPIC_NODE: _ClassVar[Topic]
    TOPIC_SCHEDULER_CONFIG: _ClassVar[Topic]

class EventType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EVENT_TYPE_UNSPECIFIED: _ClassVar[EventType]
    EVENT_TYPE_UPSERT: _ClassVar[EventType]
    EVENT_TYPE_DELETE: _ClassVar[EventType]

class GcKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    GC_KIND_UNSPECIFIED: _ClassVar[GcKind]
    GC_KIND_EVALUATIONS: _ClassVar[GcKind]
    GC_KIND_DEPLOYMENTS: _ClassVar[GcKind]
    GC_KIND_JOBS: _ClassVar[GcKind]
    GC_KIND_NODES: _ClassVar[GcKind]
TOPIC_UNSPECIFIED: Topic
TOPIC_JOB: Topic
TOPIC_EVALUATION: Topic
TOPIC_DEPLOYMENT: Topic
TOPIC_ALLOCATION: Topic
TOPIC_NODE: Topic
TOPIC_SCHEDULER_CONFIG: Topic
EVENT_TYPE_UNSPECIFIED: EventType
EVENT_TYPE_UPSERT: EventType
EVENT_TYPE_DELETE: EventType
GC_KIND_UNSPECIFIED: GcKind
GC_KIND_EVALUATIONS: GcKind
GC_KIND_DEPLOYMENTS: GcKind
GC_KIND_JOBS: GcKind
GC_KIND_NODES: GcKind

class RegisterJobRequest(_message.Message):
    __slots__ = ("job", "enforce_index", "job_modify_index")
    JOB_FIELD_NUMBER: _ClassVar[int]
    ENFORCE_INDEX_FIELD_NUMBER: _ClassVar[int]
    JOB_MODIFY_INDEX_FIELD_NUMBER: _ClassVar[int]
    job: _job_pb2.Job
    enforce_index: bool
    job_modify_index: int
    def __init__(self, job: _Optional[_Union[_job_pb2.Job, _Mapping]] = ..., enforce_index: _Optional[bool] = ..., job_modify_index: _Optional[int] = ...) -> None: ...

class RegisterJobResponse(_message.Message):
    __slots__ = ("job_modify_index", "eval_id", "deployment_id", "version", "index", "warnings")
    JOB_MODIFY_INDEX_FIELD_NUMBER: _ClassVar[int]
    EVAL_ID_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    job_modify_index: int
    eval_id: str
    deployment_id: str
    version: int
    index: int
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, job_modify_index: _Optional[int] = ..., eval_id: _Optional[str] = ..., deployment_id: _Optional[str] = ..., version: _Optional[int] = ..., index: _Optional[int] = ..., warnings: _Optional[_Iterable[str]] = ...) -> None: ...

class GetJobRequest(_message.Message):
    __slots__ = ("namespace", "id", "version", "query")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    id: str
    version: int
    query: _query_pb2.QueryOptions
    def __init__(self, namespace: _Optional[str] = ..., id: _Optional[str] = ..., version: _Optional[int] = ..., query: _Optional[_Union[_query_pb2.QueryOptions, _Mapping]] = ...) -> None: ...

class GetJobResponse(_message.Message):
    __slots__ = ("job", "meta")
    JOB_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    job: _job_pb2.Job
    meta: _query_pb2.QueryMeta
    def __init__(self, job: _Optional[_Union[_job_pb2.Job, _Mapping]] = ..., meta: _Optional[_Union[_query_pb2.QueryMeta, _Mapping]] = ...) -> None: ...

class ListJobsRequest(_message.Message):
    __slots__ = ("namespace", "prefix", "filter", "order_by", "page_size", "page_token", "query")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    ORDER_BY_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    prefix: str
    filter: str
    order_by: str
    page_size: int
    page_token: str
    query: _query_pb2.QueryOptions
    def __init__(self, namespace: _Optional[str] = ..., prefix: _Optional[str] = ..., filter: _Optional[str] = ..., order_by: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., query: _Optional[_Union[_query_pb2.QueryOptions, _Mapping]] = ...) -> None: ...

class ListJobsResponse(_message.Message):
    __slots__ = ("jobs", "next_page_token", "meta")
    JOBS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[_job_pb2.Job]
    next_page_token: str
    meta: _query_pb2.QueryMeta
    def __init__(self, jobs: _Optional[_Iterable[_Union[_job_pb2.Job, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., meta: _Optional[_Union[_query_pb2.QueryMeta, _Mapping]] = ...) -> None: ...

class ListJobVersionsRequest(_message.Message):
    __slots__ = ("namespace", "id", "query")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    id: str
    query: _query_pb2.QueryOptions
    def __init__(self, namespace: _Optional[str] = ..., id: _Optional[str] = ..., query: _Optional[_Union[_query_pb2.QueryOptions, _Mapping]] = ...) -> None: ...

class ListJobVersionsResponse(_message.Message):
    __slots__ = ("versions", "meta")
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    versions: _containers.RepeatedCompositeFieldContainer[_job_pb2.Job]
    meta: _query_pb2.QueryMeta
    def __init__(self, versions: _Optional[_Iterable[_Union[_job_pb2.Job, _Mapping]]] = ..., meta: _Optional[_Union[_query_pb2.QueryMeta, _Mapping]] = ...) -> None: ...

class GetJobSnapshotRequest(_message.Message):
    __slots__ = ("namespace", "id", "query", "allocations_modified_after")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    ALLOCATIONS_MODIFIED_AFTER_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    id: str
    query: _query_pb2.QueryOptions
    allocations_modified_after: int
    def __init__(self, namespace: _Optional[str] = ..., id: _Optional[str] = ..., query: _Optional[_Union[_query_pb2.QueryOptions, _Mapping]] = ..., allocations_modified_after: _Optional[int] = ...) -> None: ...

class JobSnapshot(_message.Message):
    __slots__ = ("job", "versions", "deployment", "allocations", "allocations_complete", "alloc_set")
    JOB_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_FIELD_NUMBER: _ClassVar[int]
    ALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    ALLOCATIONS_COMPLETE_FIELD_NUMBER: _ClassVar[int]
    ALLOC_SET_FIELD_NUMBER: _ClassVar[int]
    job: _job_pb2.Job
    versions: _containers.RepeatedCompositeFieldContainer[_job_pb2.Job]
    deployment: _deployment_pb2.Deployment
    allocations: _containers.RepeatedCompositeFieldContainer[_allocation_pb2.Allocation]
    allocations_complete: bool
    alloc_set: JobAllocSet
    def __init__(self, job: _Optional[_Union[_job_pb2.Job, _Mapping]] = ..., versions: _Optional[_Iterable[_Union[_job_pb2.Job, _Mapping]]] = ..., deployment: _Optional[_Union[_deployment_pb2.Deployment, _Mapping]] = ..., allocations: _Optional[_Iterable[_Union[_allocation_pb2.Allocation, _Mapping]]] = ..., allocations_complete: _Optional[bool] = ..., alloc_set: _Optional[_Union[JobAllocSet, _Mapping]] = ...) -> None: ...

class GetJobSnapshotResponse(_message.Message):
    __slots__ = ("snapshot", "meta")
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    snapshot: JobSnapshot
    meta: _query_pb2.QueryMeta
    def __init__(self, snapshot: _Optional[_Union[JobSnapshot, _Mapping]] = ..., meta: _Optional[_Union[_query_pb2.QueryMeta, _Mapping]] = ...) -> None: ...

class DeregisterJobRequest(_message.Message):
    __slots__ = ("namespace", "id", "purge")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    PURGE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    id: str
    purge: bool
    def __init__(self, namespace: _Optional[str] = ..., id: _Optional[str] = ..., purge: _Optional[bool] = ...) -> None: ...

class DeregisterJobResponse(_message.Message):
    __slots__ = ("eval_id", "job_modify_index", "index", "purged_versions", "purged_deployments", "purged_evaluations", "purged_allocations", "purge_txns", "purge_pending", "stopped_allocations", "pending_versions", "pending_deployments", "pending_evaluations", "pending_allocations")
    EVAL_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_MODIFY_INDEX_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    PURGED_VERSIONS_FIELD_NUMBER: _ClassVar[int]
    PURGED_DEPLOYMENTS_FIELD_NUMBER: _ClassVar[int]
    PURGED_EVALUATIONS_FIELD_NUMBER: _ClassVar[int]
    PURGED_ALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    PURGE_TXNS_FIELD_NUMBER: _ClassVar[int]
    PURGE_PENDING_FIELD_NUMBER: _ClassVar[int]
    STOPPED_ALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    PENDING_VERSIONS_FIELD_NUMBER: _ClassVar[int]
    PENDING_DEPLOYMENTS_FIELD_NUMBER: _ClassVar[int]
    PENDING_EVALUATIONS_FIELD_NUMBER: _ClassVar[int]
    PENDING_ALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    eval_id: str
    job_modify_index: int
    index: int
    purged_versions: int
    purged_deployments: int
    purged_evaluations: int
    purged_allocations: int
    purge_txns: int
    purge_pending: bool
    stopped_allocations: int
    pending_versions: int
    pending_deployments: int
    pending_evaluations: int
    pending_allocations: int
    def __init__(self, eval_id: _Optional[str] = ..., job_modify_index: _Optional[int] = ..., index: _Optional[int] = ..., purged_versions: _Optional[int] = ..., purged_deployments: _Optional[int] = ..., purged_evaluations: _Optional[int] = ..., purged_allocations: _Optional[int] = ..., purge_txns: _Optional[int] = ..., purge_pending: _Optional[bool] = ..., stopped_allocations: _Optional[int] = ..., pending_versions: _Optional[int] = ..., pending_deployments: _Optional[int] = ..., pending_evaluations: _Optional[int] = ..., pending_allocations: _Optional[int] = ...) -> None: ...

class GetEvaluationRequest(_message.Message):
    __slots__ = ("namespace", "id", "include_related", "query")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_RELATED_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    id: str
    include_related: bool
    query: _query_pb2.QueryOptions
    def __init__(self, namespace: _Optional[str] = ..., id: _Optional[str] = ..., include_related: _Optional[bool] = ..., query: _Optional[_Union[_query_pb2.QueryOptions, _Mapping]] = ...) -> None: ...

class GetEvaluationResponse(_message.Message):
    __slots__ = ("evaluation", "related", "meta")
    EVALUATION_FIELD_NUMBER: _ClassVar[int]
    RELATED_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    evaluation: _evaluation_pb2.Evaluation
    related: _containers.RepeatedCompositeFieldContainer[_evaluation_pb2.Evaluation]
    meta: _query_pb2.QueryMeta
    def __init__(self, evaluation: _Optional[_Union[_evaluation_pb2.Evaluation, _Mapping]] = ..., related: _Optional[_Iterable[_Union[_evaluation_pb2.Evaluation, _Mapping]]] = ..., meta: _Optional[_Union[_query_pb2.QueryMeta, _Mapping]] = ...) -> None: ...

class ListEvaluationsRequest(_message.Message):
    __slots__ = ("namespace", "prefix", "filter", "order_by", "page_size", "page_token", "query")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    ORDER_BY_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    prefix: str
    filter: str
    order_by: str
    page_size: int
    page_token: str
    query: _query_pb2.QueryOptions
    def __init__(self, namespace: _Optional[str] = ..., prefix: _Optional[str] = ..., filter: _Optional[str] = ..., order_by: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., query: _Optional[_Union[_query_pb2.QueryOptions, _Mapping]] = ...) -> None: ...

class ListEvaluationsResponse(_message.Message):
    __slots__ = ("evaluations", "next_page_token", "meta")
    EVALUATIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    evaluations: _containers.RepeatedCompositeFieldContainer[_evaluation_pb2.Evaluation]
    next_page_token: str
    meta: _query_pb2.QueryMeta
    def __init__(self, evaluations: _Optional[_Iterable[_Union[_evaluation_pb2.Evaluation, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., meta: _Optional[_Union[_query_pb2.QueryMeta, _Mapping]] = ...) -> None: ...

class CountEvaluationsRequest(_message.Message):
    __slots__ = ("namespace", "filter", "query", "job_id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    filter: str
    query: _query_pb2.QueryOptions
    job_id: str
    def __init__(self, namespace: _Optional[str] = ..., filter: _Optional[str] = ..., query: _Optional[_Union[_query_pb2.QueryOptions, _Mapping]] = ..., job_id: _Optional[str] = ...) -> None: ...

class CountEvaluationsResponse(_message.Message):
    __slots__ = ("count", "meta")
    COUNT_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    count: int
    meta: _query_pb2.QueryMeta
    def __init__(self, count: _Optional[int] = ..., meta: _Optional[_Union[_query_pb2.QueryMeta, _Mapping]] = ...) -> None: ...

class DeleteEvaluationsRequest(_message.Message):
    __slots__ = ("ids", "filter", "namespace", "job_id", "page_size", "page_token", "dry_run")
    IDS_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[str]
    filter: str
    namespace: str
    job_id: str
    page_size: int
    page_token: str
    dry_run: bool
    def __init__(self, ids: _Optional[_Iterable[str]] = ..., filter: _Optional[str] = ..., namespace: _Optional[str] = ..., job_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., dry_run: _Optional[bool] = ...) -> None: ...

class DeleteEvaluationsResponse(_message.Message):
    __slots__ = ("deleted", "next_page_token", "index")
    DELETED_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    deleted: int
    next_page_token: str
    index: int
    def __init__(self, deleted: _Optional[int] = ..., next_page_token: _Optional[str] = ..., index: _Optional[int] = ...) -> None: ...

class UpsertEvaluationsRequest(_message.Message):
    __slots__ = ("evaluations",)
    EVALUATIONS_FIELD_NUMBER: _ClassVar[int]
    evaluations: _containers.RepeatedCompositeFieldContainer[_evaluation_pb2.Evaluation]
    def __init__(self, evaluations: _Optional[_Iterable[_Union[_evaluation_pb2.Evaluation, _Mapping]]] = ...) -> None: ...

class UpsertEvaluationsResponse(_message.Message):
    __slots__ = ("eval_ids", "index")
    EVAL_IDS_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    eval_ids: _containers.RepeatedScalarFieldContainer[str]
    index: int
    def __init__(self, eval_ids: _Optional[_Iterable[str]] = ..., index: _Optional[int] = ...) -> None: ...

class UpdateEvaluationsRequest(_message.Message):
    __slots__ = ("updates", "creates")
    UPDATES_FIELD_NUMBER: _ClassVar[int]
    CREATES_FIELD_NUMBER: _ClassVar[int]
    updates: _containers.RepeatedCompositeFieldContainer[_evaluation_pb2.Evaluation]
    creates: _containers.RepeatedCompositeFieldContainer[_evaluation_pb2.Evaluation]
    def __init__(self, updates: _Optional[_Iterable[_Union[_evaluation_pb2.Evaluation, _Mapping]]] = ..., creates: _Optional[_Iterable[_Union[_evaluation_pb2.Evaluation, _Mapping]]] = ...) -> None: ...

class UpdateEvaluationsResponse(_message.Message):
    __slots__ = ("index",)
    INDEX_FIELD_NUMBER: _ClassVar[int]
    index: int
    def __init__(self, index: _Optional[int] = ...) -> None: ...

class GetDeploymentRequest(_message.Message):
    __slots__ = ("namespace", "id", "query")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    id: str
    query: _query_pb2.QueryOptions
    def __init__(self, namespace: _Optional[str] = ..., id: _Optional[str] = ..., query: _Optional[_Union[_query_pb2.QueryOptions, _Mapping]] = ...) -> None: ...

class GetDeploymentResponse(_message.Message):
    __slots__ = ("deployment", "meta")
    DEPLOYMENT_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    deployment: _deployment_pb2.Deployment
    meta: _query_pb2.QueryMeta
    def __init__(self, deployment: _Optional[_Union[_deployment_pb2.Deployment, _Mapping]] = ..., meta: _Optional[_Union[_query_pb2.QueryMeta, _Mapping]] = ...) -> None: ...

class ListDeploymentsRequest(_message.Message):
    __slots__ = ("namespace", "prefix", "filter", "order_by", "page_size", "page_token", "query")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    ORDER_BY_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    prefix: str
    filter: str
    order_by: str
    page_size: int
    page_token: str
    query: _query_pb2.QueryOptions
    def __init__(self, namespace: _Optional[str] = ..., prefix: _Optional[str] = ..., filter: _Optional[str] = ..., order_by: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., query: _Optional[_Union[_query_pb2.QueryOptions, _Mapping]] = ...) -> None: ...

class ListDeploymentsResponse(_message.Message):
    __slots__ = ("deployments", "next_page_token", "meta")
    DEPLOYMENTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    deployments: _containers.RepeatedCompositeFieldContainer[_deployment_pb2.Deployment]
    next_page_token: str
    meta: _query_pb2.QueryMeta
    def __init__(self, deployments: _Optional[_Iterable[_Union[_deployment_pb2.Deployment, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., meta: _Optional[_Union[_query_pb2.QueryMeta, _Mapping]] = ...) -> None: ...

class UpdateDeploymentRequest(_message.Message):
    __slots__ = ("deployment", "stable_job_version", "revert_job", "revert_expected_job_modify_index", "evaluations", "allocation_updates")
    DEPLOYMENT_FIELD_NUMBER: _ClassVar[int]
    STABLE_JOB_VERSION_FIELD_NUMBER: _ClassVar[int]
    REVERT_JOB_FIELD_NUMBER: _ClassVar[int]
    REVERT_EXPECTED_JOB_MODIFY_INDEX_FIELD_NUMBER: _ClassVar[int]
    EVALUATIONS_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_UPDATES_FIELD_NUMBER: _ClassVar[int]
    deployment: _deployment_pb2.Deployment
    stable_job_version: int
    revert_job: _job_pb2.Job
    revert_expected_job_modify_index: int
    evaluations: _containers.RepeatedCompositeFieldContainer[_evaluation_pb2.Evaluation]
    allocation_updates: _containers.RepeatedCompositeFieldContainer[AllocationUpdate]
    def __init__(self, deployment: _Optional[_Union[_deployment_pb2.Deployment, _Mapping]] = ..., stable_job_version: _Optional[int] = ..., revert_job: _Optional[_Union[_job_pb2.Job, _Mapping]] = ..., revert_expected_job_modify_index: _Optional[int] = ..., evaluations: _Optional[_Iterable[_Union[_evaluation_pb2.Evaluation, _Mapping]]] = ..., allocation_updates: _Optional[_Iterable[_Union[AllocationUpdate, _Mapping]]] = ...) -> None: ...

class UpdateDeploymentResponse(_message.Message):
    __slots__ = ("index", "eval_ids", "reverted_job_version")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    EVAL_IDS_FIELD_NUMBER: _ClassVar[int]
    REVERTED_JOB_VERSION_FIELD_NUMBER: _ClassVar[int]
    index: int
    eval_ids: _containers.RepeatedScalarFieldContainer[str]
    reverted_job_version: int
    def __init__(self, index: _Optional[int] = ..., eval_ids: _Optional[_Iterable[str]] = ..., reverted_job_version: _Optional[int] = ...) -> None: ...

class GetAllocationRequest(_message.Message):
    __slots__ = ("namespace", "id", "query")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    id: str
    query: _query_pb2.QueryOptions
    def __init__(self, namespace: _Optional[str] = ..., id: _Optional[str] = ..., query: _Optional[_Union[_query_pb2.QueryOptions, _Mapping]] = ...) -> None: ...

class GetAllocationResponse(_message.Message):
    __slots__ = ("allocation", "meta")
    ALLOCATION_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    allocation: _allocation_pb2.Allocation
    meta: _query_pb2.QueryMeta
    def __init__(self, allocation: _Optional[_Union[_allocation_pb2.Allocation, _Mapping]] = ..., meta: _Optional[_Union[_query_pb2.QueryMeta, _Mapping]] = ...) -> None: ...

class ListAllocationsRequest(_message.Message):
    __slots__ = ("namespace", "prefix", "filter", "order_by", "page_size", "page_token", "query")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    ORDER_BY_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    prefix: str
    filter: str
    order_by: str
    page_size: int
    page_token: str
    query: _query_pb2.QueryOptions
    def __init__(self, namespace: _Optional[str] = ..., prefix: _Optional[str] = ..., filter: _Optional[str] = ..., order_by: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., query: _Optional[_Union[_query_pb2.QueryOptions, _Mapping]] = ...) -> None: ...

class ListAllocationsResponse(_message.Message):
    __slots__ = ("allocations", "next_page_token", "meta")
    ALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    allocations: _containers.RepeatedCompositeFieldContainer[_allocation_pb2.Allocation]
    next_page_token: str
    meta: _query_pb2.QueryMeta
    def __init__(self, allocations: _Optional[_Iterable[_Union[_allocation_pb2.Allocation, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., meta: _Optional[_Union[_query_pb2.QueryMeta, _Mapping]] = ...) -> None: ...

class UpsertAllocationsRequest(_message.Message):
    __slots__ = ("allocations",)
    ALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    allocations: _containers.RepeatedCompositeFieldContainer[_allocation_pb2.Allocation]
    def __init__(self, allocations: _Optional[_Iterable[_Union[_allocation_pb2.Allocation, _Mapping]]] = ...) -> None: ...

class UpsertAllocationsResponse(_message.Message):
    __slots__ = ("allocation_ids", "index")
    ALLOCATION_IDS_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    allocation_ids: _containers.RepeatedScalarFieldContainer[str]
    index: int
    def __init__(self, allocation_ids: _Optional[_Iterable[str]] = ..., index: _Optional[int] = ...) -> None: ...

class AllocationUpdate(_message.Message):
    __slots__ = ("namespace", "id", "client_status", "client_description", "healthy")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    CLIENT_STATUS_FIELD_NUMBER: _ClassVar[int]
    CLIENT_DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    HEALTHY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    id: str
    client_status: _allocation_pb2.AllocClientStatus
    client_description: str
    healthy: bool
    def __init__(self, namespace: _Optional[str] = ..., id: _Optional[str] = ..., client_status: _Optional[_Union[_allocation_pb2.AllocClientStatus, str]] = ..., client_description: _Optional[str] = ..., healthy: _Optional[bool] = ...) -> None: ...

class UpdateAllocationsRequest(_message.Message):
    __slots__ = ("updates", "nodes")
    UPDATES_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    updates: _containers.RepeatedCompositeFieldContainer[AllocationUpdate]
    nodes: _containers.RepeatedCompositeFieldContainer[NodeAllocationUpdates]
    def __init__(self, updates: _Optional[_Iterable[_Union[AllocationUpdate, _Mapping]]] = ..., nodes: _Optional[_Iterable[_Union[NodeAllocationUpdates, _Mapping]]] = ...) -> None: ...

class UpdateAllocationsResponse(_message.Message):
    __slots__ = ("index",)
    INDEX_FIELD_NUMBER: _ClassVar[int]
    index: int
    def __init__(self, index: _Optional[int] = ...) -> None: ...

class UpsertNodeRequest(_message.Message):
    __slots__ = ("node",)
    NODE_FIELD_NUMBER: _ClassVar[int]
    node: _node_pb2.Node
    def __init__(self, node: _Optional[_Union[_node_pb2.Node, _Mapping]] = ...) -> None: ...

class UpsertNodeResponse(_message.Message):
    __slots__ = ("index", "secret_id")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    SECRET_ID_FIELD_NUMBER: _ClassVar[int]
    index: int
    secret_id: str
    def __init__(self, index: _Optional[int] = ..., secret_id: _Optional[str] = ...) -> None: ...

class GetNodeRequest(_message.Message):
    __slots__ = ("id", "query")
    ID_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    id: str
    query: _query_pb2.QueryOptions
    def __init__(self, id: _Optional[str] = ..., query: _Optional[_Union[_query_pb2.QueryOptions, _Mapping]] = ...) -> None: ...

class GetNodeResponse(_message.Message):
    __slots__ = ("node", "meta")
    NODE_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    node: _node_pb2.Node
    meta: _query_pb2.QueryMeta
    def __init__(self, node: _Optional[_Union[_node_pb2.Node, _Mapping]] = ..., meta: _Optional[_Union[_query_pb2.QueryMeta, _Mapping]] = ...) -> None: ...

class ListNodesRequest(_message.Message):
    __slots__ = ("prefix", "filter", "order_by", "page_size", "page_token", "query")
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    ORDER_BY_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    prefix: str
    filter: str
    order_by: str
    page_size: int
    page_token: str
    query: _query_pb2.QueryOptions
    def __init__(self, prefix: _Optional[str] = ..., filter: _Optional[str] = ..., order_by: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., query: _Optional[_Union[_query_pb2.QueryOptions, _Mapping]] = ...) -> None: ...

class ListNodesResponse(_message.Message):
    __slots__ = ("nodes", "next_page_token", "meta")
    NODES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[_node_pb2.Node]
    next_page_token: str
    meta: _query_pb2.QueryMeta
    def __init__(self, nodes: _Optional[_Iterable[_Union[_node_pb2.Node, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., meta: _Optional[_Union[_query_pb2.QueryMeta, _Mapping]] = ...) -> None: ...

class GetSchedulerConfigRequest(_message.Message):
    __slots__ = ("query",)
    QUERY_FIELD_NUMBER: _ClassVar[int]
    query: _query_pb2.QueryOptions
    def __init__(self, query: _Optional[_Union[_query_pb2.QueryOptions, _Mapping]] = ...) -> None: ...

class GetSchedulerConfigResponse(_message.Message):
    __slots__ = ("config", "meta")
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    config: _scheduler_pb2.SchedulerConfig
    meta: _query_pb2.QueryMeta
    def __init__(self, config: _Optional[_Union[_scheduler_pb2.SchedulerConfig, _Mapping]] = ..., meta: _Optional[_Union[_query_pb2.QueryMeta, _Mapping]] = ...) -> None: ...

class SetSchedulerConfigRequest(_message.Message):
    __slots__ = ("config", "cas_index")
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    CAS_INDEX_FIELD_NUMBER: _ClassVar[int]
    config: _scheduler_pb2.SchedulerConfig
    cas_index: int
    def __init__(self, config: _Optional[_Union[_scheduler_pb2.SchedulerConfig, _Mapping]] = ..., cas_index: _Optional[int] = ...) -> None: ...

class SetSchedulerConfigResponse(_message.Message):
    __slots__ = ("updated", "index")
    UPDATED_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    updated: bool
    index: int
    def __init__(self, updated: _Optional[bool] = ..., index: _Optional[int] = ...) -> None: ...

class SubscribeRequest(_message.Message):
    __slots__ = ("topics", "keys", "namespace", "from_index", "heartbeat_interval")
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    FROM_INDEX_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedScalarFieldContainer[Topic]
    keys: _containers.RepeatedScalarFieldContainer[str]
    namespace: str
    from_index: int
    heartbeat_interval: _duration_pb2.Duration
    def __init__(self, topics: _Optional[_Iterable[_Union[Topic, str]]] = ..., keys: _Optional[_Iterable[str]] = ..., namespace: _Optional[str] = ..., from_index: _Optional[int] = ..., heartbeat_interval: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ("topic", "type", "namespace", "key", "index", "job", "evaluation", "deployment", "allocation", "node", "scheduler_config")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    EVALUATION_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    SCHEDULER_CONFIG_FIELD_NUMBER: _ClassVar[int]
    topic: Topic
    type: EventType
    namespace: str
    key: str
    index: int
    job: _job_pb2.Job
    evaluation: _evaluation_pb2.Evaluation
    deployment: _deployment_pb2.Deployment
    allocation: _allocation_pb2.Allocation
    node: _node_pb2.Node
    scheduler_config: _scheduler_pb2.SchedulerConfig
    def __init__(self, topic: _Optional[_Union[Topic, str]] = ..., type: _Optional[_Union[EventType, str]] = ..., namespace: _Optional[str] = ..., key: _Optional[str] = ..., index: _Optional[int] = ..., job: _Optional[_Union[_job_pb2.Job, _Mapping]] = ..., evaluation: _Optional[_Union[_evaluation_pb2.Evaluation, _Mapping]] = ..., deployment: _Optional[_Union[_deployment_pb2.Deployment, _Mapping]] = ..., allocation: _Optional[_Union[_allocation_pb2.Allocation, _Mapping]] = ..., node: _Optional[_Union[_node_pb2.Node, _Mapping]] = ..., scheduler_config: _Optional[_Union[_scheduler_pb2.SchedulerConfig, _Mapping]] = ...) -> None: ...

class SubscribeResponse(_message.Message):
    __slots__ = ("events", "index")
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[Event]
    index: int
    def __init__(self, events: _Optional[_Iterable[_Union[Event, _Mapping]]] = ..., index: _Optional[int] = ...) -> None: ...

class GarbageCollectRequest(_message.Message):
    __slots__ = ("kind", "cutoff", "after_index", "after_key", "max_examined")
    KIND_FIELD_NUMBER: _ClassVar[int]
    CUTOFF_FIELD_NUMBER: _ClassVar[int]
    AFTER_INDEX_FIELD_NUMBER: _ClassVar[int]
    AFTER_KEY_FIELD_NUMBER: _ClassVar[int]
    MAX_EXAMINED_FIELD_NUMBER: _ClassVar[int]
    kind: GcKind
    cutoff: _timestamp_pb2.Timestamp
    after_index: int
    after_key: str
    max_examined: int
    def __init__(self, kind: _Optional[_Union[GcKind, str]] = ..., cutoff: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., after_index: _Optional[int] = ..., after_key: _Optional[str] = ..., max_examined: _Optional[int] = ...) -> None: ...

class GarbageCollectResponse(_message.Message):
    __slots__ = ("examined", "evaluations", "allocations", "deployments", "jobs", "job_versions", "nodes", "done", "after_index", "after_key", "txns", "largest_txn", "index")
    EXAMINED_FIELD_NUMBER: _ClassVar[int]
    EVALUATIONS_FIELD_NUMBER: _ClassVar[int]
    ALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENTS_FIELD_NUMBER: _ClassVar[int]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    JOB_VERSIONS_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    AFTER_INDEX_FIELD_NUMBER: _ClassVar[int]
    AFTER_KEY_FIELD_NUMBER: _ClassVar[int]
    TXNS_FIELD_NUMBER: _ClassVar[int]
    LARGEST_TXN_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    examined: int
    evaluations: int
    allocations: int
    deployments: int
    jobs: int
    job_versions: int
    nodes: int
    done: bool
    after_index: int
    after_key: str
    txns: int
    largest_txn: int
    index: int
    def __init__(self, examined: _Optional[int] = ..., evaluations: _Optional[int] = ..., allocations: _Optional[int] = ..., deployments: _Optional[int] = ..., jobs: _Optional[int] = ..., job_versions: _Optional[int] = ..., nodes: _Optional[int] = ..., done: _Optional[bool] = ..., after_index: _Optional[int] = ..., after_key: _Optional[str] = ..., txns: _Optional[int] = ..., largest_txn: _Optional[int] = ..., index: _Optional[int] = ...) -> None: ...

class SubmitPlanRequest(_message.Message):
    __slots__ = ("eval_id", "namespace", "job_id", "job_index", "alloc_indexes", "job_allocs", "node_indexes", "placements", "updates", "evaluations", "eval_token")
    class AllocIndexesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class NodeIndexesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    EVAL_ID_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_INDEX_FIELD_NUMBER: _ClassVar[int]
    ALLOC_INDEXES_FIELD_NUMBER: _ClassVar[int]
    JOB_ALLOCS_FIELD_NUMBER: _ClassVar[int]
    NODE_INDEXES_FIELD_NUMBER: _ClassVar[int]
    PLACEMENTS_FIELD_NUMBER: _ClassVar[int]
    UPDATES_FIELD_NUMBER: _ClassVar[int]
    EVALUATIONS_FIELD_NUMBER: _ClassVar[int]
    EVAL_TOKEN_FIELD_NUMBER: _ClassVar[int]
    eval_id: str
    namespace: str
    job_id: str
    job_index: int
    alloc_indexes: _containers.ScalarMap[str, int]
    job_allocs: JobAllocSet
    node_indexes: _containers.ScalarMap[str, int]
    placements: _containers.RepeatedCompositeFieldContainer[_allocation_pb2.Allocation]
    updates: _containers.RepeatedCompositeFieldContainer[_allocation_pb2.Allocation]
    evaluations: _containers.RepeatedCompositeFieldContainer[_evaluation_pb2.Evaluation]
    eval_token: str
    def __init__(self, eval_id: _Optional[str] = ..., namespace: _Optional[str] = ..., job_id: _Optional[str] = ..., job_index: _Optional[int] = ..., alloc_indexes: _Optional[_Mapping[str, int]] = ..., job_allocs: _Optional[_Union[JobAllocSet, _Mapping]] = ..., node_indexes: _Optional[_Mapping[str, int]] = ..., placements: _Optional[_Iterable[_Union[_allocation_pb2.Allocation, _Mapping]]] = ..., updates: _Optional[_Iterable[_Union[_allocation_pb2.Allocation, _Mapping]]] = ..., evaluations: _Optional[_Iterable[_Union[_evaluation_pb2.Evaluation, _Mapping]]] = ..., eval_token: _Optional[str] = ...) -> None: ...

class JobAllocSet(_message.Message):
    __slots__ = ("count", "max_create_index")
    COUNT_FIELD_NUMBER: _ClassVar[int]
    MAX_CREATE_INDEX_FIELD_NUMBER: _ClassVar[int]
    count: int
    max_create_index: int
    def __init__(self, count: _Optional[int] = ..., max_create_index: _Optional[int] = ...) -> None: ...

class SubmitPlanResponse(_message.Message):
    __slots__ = ("index", "placed", "updated", "unblocked", "refused", "refresh_index")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    PLACED_FIELD_NUMBER: _ClassVar[int]
    UPDATED_FIELD_NUMBER: _ClassVar[int]
    UNBLOCKED_FIELD_NUMBER: _ClassVar[int]
    REFUSED_FIELD_NUMBER: _ClassVar[int]
    REFRESH_INDEX_FIELD_NUMBER: _ClassVar[int]
    index: int
    placed: int
    updated: int
    unblocked: int
    refused: _containers.RepeatedCompositeFieldContainer[RefusedNode]
    refresh_index: int
    def __init__(self, index: _Optional[int] = ..., placed: _Optional[int] = ..., updated: _Optional[int] = ..., unblocked: _Optional[int] = ..., refused: _Optional[_Iterable[_Union[RefusedNode, _Mapping]]] = ..., refresh_index: _Optional[int] = ...) -> None: ...

class UpdateNodeStatusRequest(_message.Message):
    __slots__ = ("id", "status", "drain", "scheduling_eligibility", "heartbeat")
    ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    DRAIN_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_ELIGIBILITY_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    id: str
    status: _node_pb2.NodeStatus
    drain: bool
    scheduling_eligibility: _node_pb2.NodeSchedulingEligibility
    heartbeat: bool
    def __init__(self, id: _Optional[str] = ..., status: _Optional[_Union[_node_pb2.NodeStatus, str]] = ..., drain: _Optional[bool] = ..., scheduling_eligibility: _Optional[_Union[_node_pb2.NodeSchedulingEligibility, str]] = ..., heartbeat: _Optional[bool] = ...) -> None: ...

class UpdateNodeStatusResponse(_message.Message):
    __slots__ = ("index", "lost", "eval_ids", "unblocked", "heartbeat_ttl")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    LOST_FIELD_NUMBER: _ClassVar[int]
    EVAL_IDS_FIELD_NUMBER: _ClassVar[int]
    UNBLOCKED_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_TTL_FIELD_NUMBER: _ClassVar[int]
    index: int
    lost: int
    eval_ids: _containers.RepeatedScalarFieldContainer[str]
    unblocked: int
    heartbeat_ttl: _duration_pb2.Duration
    def __init__(self, index: _Optional[int] = ..., lost: _Optional[int] = ..., eval_ids: _Optional[_Iterable[str]] = ..., unblocked: _Optional[int] = ..., heartbeat_ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class ReapMissedHeartbeatsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ReapMissedHeartbeatsResponse(_message.Message):
    __slots__ = ("index", "node_ids", "lost", "eval_ids", "remaining")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    NODE_IDS_FIELD_NUMBER: _ClassVar[int]
    LOST_FIELD_NUMBER: _ClassVar[int]
    EVAL_IDS_FIELD_NUMBER: _ClassVar[int]
    REMAINING_FIELD_NUMBER: _ClassVar[int]
    index: int
    node_ids: _containers.RepeatedScalarFieldContainer[str]
    lost: int
    eval_ids: _containers.RepeatedScalarFieldContainer[str]
    remaining: int
    def __init__(self, index: _Optional[int] = ..., node_ids: _Optional[_Iterable[str]] = ..., lost: _Optional[int] = ..., eval_ids: _Optional[_Iterable[str]] = ..., remaining: _Optional[int] = ...) -> None: ...

class HeartbeatNodesRequest(_message.Message):
    __slots__ = ("node_ids", "secret_ids")
    NODE_IDS_FIELD_NUMBER: _ClassVar[int]
    SECRET_IDS_FIELD_NUMBER: _ClassVar[int]
    node_ids: _containers.RepeatedScalarFieldContainer[str]
    secret_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, node_ids: _Optional[_Iterable[str]] = ..., secret_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class NodeHeartbeat(_message.Message):
    __slots__ = ("node_id", "heartbeat_ttl", "index", "unblocked", "error_reason", "error_message")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_TTL_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    UNBLOCKED_FIELD_NUMBER: _ClassVar[int]
    ERROR_REASON_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    heartbeat_ttl: _duration_pb2.Duration
    index: int
    unblocked: int
    error_reason: str
    error_message: str
    def __init__(self, node_id: _Optional[str] = ..., heartbeat_ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., index: _Optional[int] = ..., unblocked: _Optional[int] = ..., error_reason: _Optional[str] = ..., error_message: _Optional[str] = ...) -> None: ...

class HeartbeatNodesResponse(_message.Message):
    __slots__ = ("heartbeats",)
    HEARTBEATS_FIELD_NUMBER: _ClassVar[int]
    heartbeats: _containers.RepeatedCompositeFieldContainer[NodeHeartbeat]
    def __init__(self, heartbeats: _Optional[_Iterable[_Union[NodeHeartbeat, _Mapping]]] = ...) -> None: ...

class RefusedNode(_message.Message):
    __slots__ = ("node_id", "reason", "placement_ids", "update_ids")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    UPDATE_IDS_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    reason: str
    placement_ids: _containers.RepeatedScalarFieldContainer[str]
    update_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, node_id: _Optional[str] = ..., reason: _Optional[str] = ..., placement_ids: _Optional[_Iterable[str]] = ..., update_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class UpdateNodeDrainRequest(_message.Message):
    __slots__ = ("id", "drain_strategy", "mark_eligible", "complete", "deadlined")
    ID_FIELD_NUMBER: _ClassVar[int]
    DRAIN_STRATEGY_FIELD_NUMBER: _ClassVar[int]
    MARK_ELIGIBLE_FIELD_NUMBER: _ClassVar[int]
    COMPLETE_FIELD_NUMBER: _ClassVar[int]
    DEADLINED_FIELD_NUMBER: _ClassVar[int]
    id: str
    drain_strategy: _node_pb2.DrainStrategy
    mark_eligible: bool
    complete: bool
    deadlined: bool
    def __init__(self, id: _Optional[str] = ..., drain_strategy: _Optional[_Union[_node_pb2.DrainStrategy, _Mapping]] = ..., mark_eligible: _Optional[bool] = ..., complete: _Optional[bool] = ..., deadlined: _Optional[bool] = ...) -> None: ...

class UpdateNodeDrainResponse(_message.Message):
    __slots__ = ("index", "unblocked")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    UNBLOCKED_FIELD_NUMBER: _ClassVar[int]
    index: int
    unblocked: int
    def __init__(self, index: _Optional[int] = ..., unblocked: _Optional[int] = ...) -> None: ...

class AllocTransition(_message.Message):
    __slots__ = ("namespace", "id", "transition")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    TRANSITION_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    id: str
    transition: _allocation_pb2.DesiredTransition
    def __init__(self, namespace: _Optional[str] = ..., id: _Optional[str] = ..., transition: _Optional[_Union[_allocation_pb2.DesiredTransition, _Mapping]] = ...) -> None: ...

class UpdateAllocDesiredTransitionRequest(_message.Message):
    __slots__ = ("allocations", "evaluations")
    ALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    EVALUATIONS_FIELD_NUMBER: _ClassVar[int]
    allocations: _containers.RepeatedCompositeFieldContainer[AllocTransition]
    evaluations: _containers.RepeatedCompositeFieldContainer[_evaluation_pb2.Evaluation]
    def __init__(self, allocations: _Optional[_Iterable[_Union[AllocTransition, _Mapping]]] = ..., evaluations: _Optional[_Iterable[_Union[_evaluation_pb2.Evaluation, _Mapping]]] = ...) -> None: ...

class UpdateAllocDesiredTransitionResponse(_message.Message):
    __slots__ = ("index",)
    INDEX_FIELD_NUMBER: _ClassVar[int]
    index: int
    def __init__(self, index: _Optional[int] = ...) -> None: ...

class StartJobRequest(_message.Message):
    __slots__ = ("namespace", "id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    id: str
    def __init__(self, namespace: _Optional[str] = ..., id: _Optional[str] = ...) -> None: ...

class StartJobResponse(_message.Message):
    __slots__ = ("eval_id", "version", "deployment_id", "job_modify_index", "index", "from_version")
    EVAL_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_MODIFY_INDEX_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    FROM_VERSION_FIELD_NUMBER: _ClassVar[int]
    eval_id: str
    version: int
    deployment_id: str
    job_modify_index: int
    index: int
    from_version: int
    def __init__(self, eval_id: _Optional[str] = ..., version: _Optional[int] = ..., deployment_id: _Optional[str] = ..., job_modify_index: _Optional[int] = ..., index: _Optional[int] = ..., from_version: _Optional[int] = ...) -> None: ...

class RevertJobRequest(_message.Message):
    __slots__ = ("namespace", "id", "version", "enforce_prior_version")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    ENFORCE_PRIOR_VERSION_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    id: str
    version: int
    enforce_prior_version: int
    def __init__(self, namespace: _Optional[str] = ..., id: _Optional[str] = ..., version: _Optional[int] = ..., enforce_prior_version: _Optional[int] = ...) -> None: ...

class RevertJobResponse(_message.Message):
    __slots__ = ("eval_id", "version", "deployment_id", "job_modify_index", "index", "reverted_to", "warnings")
    EVAL_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_MODIFY_INDEX_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    REVERTED_TO_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    eval_id: str
    version: int
    deployment_id: str
    job_modify_index: int
    index: int
    reverted_to: int
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, eval_id: _Optional[str] = ..., version: _Optional[int] = ..., deployment_id: _Optional[str] = ..., job_modify_index: _Optional[int] = ..., index: _Optional[int] = ..., reverted_to: _Optional[int] = ..., warnings: _Optional[_Iterable[str]] = ...) -> None: ...

class ScaleJobRequest(_message.Message):
    __slots__ = ("namespace", "id", "group", "count", "enforce_index", "message")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    ENFORCE_INDEX_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    id: str
    group: str
    count: int
    enforce_index: int
    message: str
    def __init__(self, namespace: _Optional[str] = ..., id: _Optional[str] = ..., group: _Optional[str] = ..., count: _Optional[int] = ..., enforce_index: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class ScaleJobResponse(_message.Message):
    __slots__ = ("eval_id", "version", "deployment_id", "job_modify_index", "index", "previous_count", "warnings")
    EVAL_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_MODIFY_INDEX_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_COUNT_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    eval_id: str
    version: int
    deployment_id: str
    job_modify_index: int
    index: int
    previous_count: int
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, eval_id: _Optional[str] = ..., version: _Optional[int] = ..., deployment_id: _Optional[str] = ..., job_modify_index: _Optional[int] = ..., index: _Optional[int] = ..., previous_count: _Optional[int] = ..., warnings: _Optional[_Iterable[str]] = ...) -> None: ...

class StopAllocationRequest(_message.Message):
    __slots__ = ("namespace", "id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    id: str
    def __init__(self, namespace: _Optional[str] = ..., id: _Optional[str] = ...) -> None: ...

class StopAllocationResponse(_message.Message):
    __slots__ = ("eval_id", "index")
    EVAL_ID_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    eval_id: str
    index: int
    def __init__(self, eval_id: _Optional[str] = ..., index: _Optional[int] = ...) -> None: ...

class PlanJobRequest(_message.Message):
    __slots__ = ("job",)
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: _job_pb2.Job
    def __init__(self, job: _Optional[_Union[_job_pb2.Job, _Mapping]] = ...) -> None: ...

class FieldDiff(_message.Message):
    __slots__ = ("type", "path", "old", "new")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    OLD_FIELD_NUMBER: _ClassVar[int]
    NEW_FIELD_NUMBER: _ClassVar[int]
    type: str
    path: str
    old: str
    new: str
    def __init__(self, type: _Optional[str] = ..., path: _Optional[str] = ..., old: _Optional[str] = ..., new: _Optional[str] = ...) -> None: ...

class DesiredUpdates(_message.Message):
    __slots__ = ("ignore", "place", "stop", "in_place_update", "destructive_update", "canary")
    IGNORE_FIELD_NUMBER: _ClassVar[int]
    PLACE_FIELD_NUMBER: _ClassVar[int]
    STOP_FIELD_NUMBER: _ClassVar[int]
    IN_PLACE_UPDATE_FIELD_NUMBER: _ClassVar[int]
    DESTRUCTIVE_UPDATE_FIELD_NUMBER: _ClassVar[int]
    CANARY_FIELD_NUMBER: _ClassVar[int]
    ignore: int
    place: int
    stop: int
    in_place_update: int
    destructive_update: int
    canary: int
    def __init__(self, ignore: _Optional[int] = ..., place: _Optional[int] = ..., stop: _Optional[int] = ..., in_place_update: _Optional[int] = ..., destructive_update: _Optional[int] = ..., canary: _Optional[int] = ...) -> None: ...

class FailedPlacements(_message.Message):
    __slots__ = ("count", "reasons")
    COUNT_FIELD_NUMBER: _ClassVar[int]
    REASONS_FIELD_NUMBER: _ClassVar[int]
    count: int
    reasons: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, count: _Optional[int] = ..., reasons: _Optional[_Iterable[str]] = ...) -> None: ...

class PlanJobResponse(_message.Message):
    __slots__ = ("diff_type", "diff", "desired_updates", "failed_placements", "job_modify_index", "version", "warnings", "index")
    class DesiredUpdatesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: DesiredUpdates
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[DesiredUpdates, _Mapping]] = ...) -> None: ...
    class FailedPlacementsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: FailedPlacements
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[FailedPlacements, _Mapping]] = ...) -> None: ...
    DIFF_TYPE_FIELD_NUMBER: _ClassVar[int]
    DIFF_FIELD_NUMBER: _ClassVar[int]
    DESIRED_UPDATES_FIELD_NUMBER: _ClassVar[int]
    FAILED_PLACEMENTS_FIELD_NUMBER: _ClassVar[int]
    JOB_MODIFY_INDEX_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    diff_type: str
    diff: _containers.RepeatedCompositeFieldContainer[FieldDiff]
    desired_updates: _containers.MessageMap[str, DesiredUpdates]
    failed_placements: _containers.MessageMap[str, FailedPlacements]
    job_modify_index: int
    version: int
    warnings: _containers.RepeatedScalarFieldContainer[str]
    index: int
    def __init__(self, diff_type: _Optional[str] = ..., diff: _Optional[_Iterable[_Union[FieldDiff, _Mapping]]] = ..., desired_updates: _Optional[_Mapping[str, DesiredUpdates]] = ..., failed_placements: _Optional[_Mapping[str, FailedPlacements]] = ..., job_modify_index: _Optional[int] = ..., version: _Optional[int] = ..., warnings: _Optional[_Iterable[str]] = ..., index: _Optional[int] = ...) -> None: ...

class NodeAllocationUpdates(_message.Message):
    __slots__ = ("node_id", "secret_id", "updates")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    SECRET_ID_FIELD_NUMBER: _ClassVar[int]
    UPDATES_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    secret_id: str
    updates: _containers.RepeatedCompositeFieldContainer[AllocationUpdate]
    def __init__(self, node_id: _Optional[str] = ..., secret_id: _Optional[str] = ..., updates: _Optional[_Iterable[_Union[AllocationUpdate, _Mapping]]] = ...) -> None: ...
