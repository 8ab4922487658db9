from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class SchedulerConfig(_message.Message):
    __slots__ = ("pause_eval_broker", "create_index", "modify_index")
    PAUSE_EVAL_BROKER_FIELD_NUMBER: _ClassVar[int]
    CREATE_INDEX_FIELD_NUMBER: _ClassVar[int]
    MODIFY_INDEX_FIELD_NUMBER: _ClassVar[int]
    pause_eval_broker: bool
    create_index: int
    modify_index: int
    def __init__(self, pause_eval_broker: _Optional[bool] = ..., create_index: _Optional[int] = ..., modify_index: _Optional[int] = ...) -> None: ...
