import datetime

from drover.api.types.v1 import evaluation_pb2 as _evaluation_pb2
from drover.api.types.v1 import query_pb2 as _query_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class QueueState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    QUEUE_STATE_UNSPECIFIED: _ClassVar[QueueState]
    QUEUE_STATE_READY: _ClassVar[QueueState]
    QUEUE_STATE_UNACKED: _ClassVar[QueueState]
    QUEUE_STATE_PENDING: _ClassVar[QueueState]
    QUEUE_STATE_WAITING: _ClassVar[QueueState]
    QUEUE_STATE_BLOCKED: _ClassVar[QueueState]
    QUEUE_STATE_FAILED: _ClassVar[QueueState]
QUEUE_STATE_UNSPECIFIED: QueueState
QUEUE_STATE_READY: QueueState
QUEUE_STATE_UNACKED: QueueState
QUEUE_STATE_PENDING: QueueState
QUEUE_STATE_WAITING: QueueState
QUEUE_STATE_BLOCKED: QueueState
QUEUE_STATE_FAILED: QueueState

class DequeueRequest(_message.Message):
    __slots__ = ("schedulers", "timeout", "max_evaluations")
    SCHEDULERS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    MAX_EVALUATIONS_FIELD_NUMBER: _ClassVar[int]
    schedulers: _containers.RepeatedScalarFieldContainer[str]
    timeout: _duration_pb2.Duration
    max_evaluations: int
    def __init__(self, schedulers: _Optional[_Iterable[str]] = ..., timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., max_evaluations: _Optional[int] = ...) -> None: ...

class Delivery(_message.Message):
    __slots__ = ("evaluation", "token", "wait_index")
    EVALUATION_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    WAIT_INDEX_FIELD_NUMBER: _ClassVar[int]
    evaluation: _evaluation_pb2.Evaluation
    token: str
    wait_index: int
    def __init__(self, evaluation: _Optional[_Union[_evaluation_pb2.Evaluation, _Mapping]] = ..., token: _Optional[str] = ..., wait_index: _Optional[int] = ...) -> None: ...

class DequeueResponse(_message.Message):
    __slots__ = ("evaluation", "token", "wait_index", "additional")
    EVALUATION_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    WAIT_INDEX_FIELD_NUMBER: _ClassVar[int]
    ADDITIONAL_FIELD_NUMBER: _ClassVar[int]
    evaluation: _evaluation_pb2.Evaluation
    token: str
    wait_index: int
    additional: _containers.RepeatedCompositeFieldContainer[Delivery]
    def __init__(self, evaluation: _Optional[_Union[_evaluation_pb2.Evaluation, _Mapping]] = ..., token: _Optional[str] = ..., wait_index: _Optional[int] = ..., additional: _Optional[_Iterable[_Union[Delivery, _Mapping]]] = ...) -> None: ...

class AckRequest(_message.Message):
    __slots__ = ("eval_id", "token", "status", "status_description", "follow_ups")
    EVAL_ID_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    STATUS_DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    FOLLOW_UPS_FIELD_NUMBER: _ClassVar[int]
    eval_id: str
    token: str
    status: _evaluation_pb2.EvaluationStatus
    status_description: str
    follow_ups: _containers.RepeatedCompositeFieldContainer[_evaluation_pb2.Evaluation]
    def __init__(self, eval_id: _Optional[str] = ..., token: _Optional[str] = ..., status: _Optional[_Union[_evaluation_pb2.EvaluationStatus, str]] = ..., status_description: _Optional[str] = ..., follow_ups: _Optional[_Iterable[_Union[_evaluation_pb2.Evaluation, _Mapping]]] = ...) -> None: ...

class AckResponse(_message.Message):
    __slots__ = ("index",)
    INDEX_FIELD_NUMBER: _ClassVar[int]
    index: int
    def __init__(self, index: _Optional[int] = ...) -> None: ...

class AckBatchRequest(_message.Message):
    __slots__ = ("acks",)
    ACKS_FIELD_NUMBER: _ClassVar[int]
    acks: _containers.RepeatedCompositeFieldContainer[AckRequest]
    def __init__(self, acks: _Optional[_Iterable[_Union[AckRequest, _Mapping]]] = ...) -> None: ...

class AckOutcome(_message.Message):
    __slots__ = ("eval_id", "index", "code", "reason", "message")
    EVAL_ID_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    eval_id: str
    index: int
    code: int
    reason: str
    message: str
    def __init__(self, eval_id: _Optional[str] = ..., index: _Optional[int] = ..., code: _Optional[int] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class AckBatchResponse(_message.Message):
    __slots__ = ("outcomes",)
    OUTCOMES_FIELD_NUMBER: _ClassVar[int]
    outcomes: _containers.RepeatedCompositeFieldContainer[AckOutcome]
    def __init__(self, outcomes: _Optional[_Iterable[_Union[AckOutcome, _Mapping]]] = ...) -> None: ...

class NackRequest(_message.Message):
    __slots__ = ("eval_id", "token")
    EVAL_ID_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    eval_id: str
    token: str
    def __init__(self, eval_id: _Optional[str] = ..., token: _Optional[str] = ...) -> None: ...

class NackResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class OutstandingResetRequest(_message.Message):
    __slots__ = ("eval_id", "token")
    EVAL_ID_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    eval_id: str
    token: str
    def __init__(self, eval_id: _Optional[str] = ..., token: _Optional[str] = ...) -> None: ...

class OutstandingResetResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetBrokerStatsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SchedulerStats(_message.Message):
    __slots__ = ("ready", "unacked")
    READY_FIELD_NUMBER: _ClassVar[int]
    UNACKED_FIELD_NUMBER: _ClassVar[int]
    ready: int
    unacked: int
    def __init__(self, ready: _Optional[int] = ..., unacked: _Optional[int] = ...) -> None: ...

class TimingSummary(_message.Message):
    __slots__ = ("p50_ms", "p99_ms", "max_ms", "count")
    P50_MS_FIELD_NUMBER: _ClassVar[int]
    P99_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_MS_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    p50_ms: float
    p99_ms: float
    max_ms: float
    count: int
    def __init__(self, p50_ms: _Optional[float] = ..., p99_ms: _Optional[float] = ..., max_ms: _Optional[float] = ..., count: _Optional[int] = ...) -> None: ...

class BrokerStats(_message.Message):
    __slots__ = ("total_ready", "total_unacked", "total_pending", "total_waiting", "total_blocked", "total_cancelled", "total_failed", "by_scheduler", "ready_wait", "processing", "enabled", "leader_term")
    class BySchedulerEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: SchedulerStats
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[SchedulerStats, _Mapping]] = ...) -> None: ...
    TOTAL_READY_FIELD_NUMBER: _ClassVar[int]
    TOTAL_UNACKED_FIELD_NUMBER: _ClassVar[int]
    TOTAL_PENDING_FIELD_NUMBER: _ClassVar[int]
    TOTAL_WAITING_FIELD_NUMBER: _ClassVar[int]
    TOTAL_BLOCKED_FIELD_NUMBER: _ClassVar[int]
    TOTAL_CANCELLED_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FAILED_FIELD_NUMBER: _ClassVar[int]
    BY_SCHEDULER_FIELD_NUMBER: _ClassVar[int]
    READY_WAIT_FIELD_NUMBER: _ClassVar[int]
    PROCESSING_FIELD_NUMBER: _ClassVar[int]
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    LEADER_TERM_FIELD_NUMBER: _ClassVar[int]
    total_ready: int
    total_unacked: int
    total_pending: int
    total_waiting: int
    total_blocked: int
    total_cancelled: int
    total_failed: int
    by_scheduler: _containers.MessageMap[str, SchedulerStats]
    ready_wait: TimingSummary
    processing: TimingSummary
    enabled: bool
    leader_term: int
    def __init__(self, total_ready: _Optional[int] = ..., total_unacked: _Optional[int] = ..., total_pending: _Optional[int] = ..., total_waiting: _Optional[int] = ..., total_blocked: _Optional[int] = ..., total_cancelled: _Optional[int] = ..., total_failed: _Optional[int] = ..., by_scheduler: _Optional[_Mapping[str, SchedulerStats]] = ..., ready_wait: _Optional[_Union[TimingSummary, _Mapping]] = ..., processing: _Optional[_Union[TimingSummary, _Mapping]] = ..., enabled: _Optional[bool] = ..., leader_term: _Optional[int] = ...) -> None: ...

class GetBrokerStatsResponse(_message.Message):
    __slots__ = ("stats", "meta")
    STATS_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    stats: BrokerStats
    meta: _query_pb2.QueryMeta
    def __init__(self, stats: _Optional[_Union[BrokerStats, _Mapping]] = ..., meta: _Optional[_Union[_query_pb2.QueryMeta, _Mapping]] = ...) -> None: ...

class QueuedEvaluation(_message.Message):
    __slots__ = ("evaluation", "state", "deliveries")
    EVALUATION_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    DELIVERIES_FIELD_NUMBER: _ClassVar[int]
    evaluation: _evaluation_pb2.Evaluation
    state: QueueState
    deliveries: int
    def __init__(self, evaluation: _Optional[_Union[_evaluation_pb2.Evaluation, _Mapping]] = ..., state: _Optional[_Union[QueueState, str]] = ..., deliveries: _Optional[int] = ...) -> None: ...

class ListQueueRequest(_message.Message):
    __slots__ = ("namespace", "prefix", "filter", "order_by", "page_size", "page_token")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    ORDER_BY_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    prefix: str
    filter: str
    order_by: str
    page_size: int
    page_token: str
    def __init__(self, namespace: _Optional[str] = ..., prefix: _Optional[str] = ..., filter: _Optional[str] = ..., order_by: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListQueueResponse(_message.Message):
    __slots__ = ("evaluations", "next_page_token", "meta")
    EVALUATIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    evaluations: _containers.RepeatedCompositeFieldContainer[QueuedEvaluation]
    next_page_token: str
    meta: _query_pb2.QueryMeta
    def __init__(self, evaluations: _Optional[_Iterable[_Union[QueuedEvaluation, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., meta: _Optional[_Union[_query_pb2.QueryMeta, _Mapping]] = ...) -> None: ...

class CancelEvaluationRequest(_message.Message):
    __slots__ = ("eval_id", "reason")
    EVAL_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    eval_id: str
    reason: str
    def __init__(self, eval_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class CancelEvaluationResponse(_message.Message):
    __slots__ = ("index",)
    INDEX_FIELD_NUMBER: _ClassVar[int]
    index: int
    def __init__(self, index: _Optional[int] = ...) -> None: ...
