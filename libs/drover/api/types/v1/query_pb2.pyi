import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class QueryOptions(_message.Message):
    __slots__ = ("stale", "min_index", "max_wait", "max_stale")
    STALE_FIELD_NUMBER: _ClassVar[int]
    MIN_INDEX_FIELD_NUMBER: _ClassVar[int]
    MAX_WAIT_FIELD_NUMBER: _ClassVar[int]
    MAX_STALE_FIELD_NUMBER: _ClassVar[int]
    stale: bool
    min_index: int
    max_wait: _duration_pb2.Duration
    max_stale: _duration_pb2.Duration
    def __init__(self, stale: _Optional[bool] = ..., min_index: _Optional[int] = ..., max_wait: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., max_stale: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class QueryMeta(_message.Message):
    __slots__ = ("index", "known_leader", "last_contact")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    KNOWN_LEADER_FIELD_NUMBER: _ClassVar[int]
    LAST_CONTACT_FIELD_NUMBER: _ClassVar[int]
    index: int
    known_leader: bool
    last_contact: _duration_pb2.Duration
    def __init__(self, index: _Optional[int] = ..., known_leader: _Optional[bool] = ..., last_contact: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...
