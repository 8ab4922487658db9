import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TokenType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TOKEN_TYPE_UNSPECIFIED: _ClassVar[TokenType]
    TOKEN_TYPE_CLIENT: _ClassVar[TokenType]
    TOKEN_TYPE_MANAGEMENT: _ClassVar[TokenType]
TOKEN_TYPE_UNSPECIFIED: TokenType
TOKEN_TYPE_CLIENT: TokenType
TOKEN_TYPE_MANAGEMENT: TokenType

class Policy(_message.Message):
    __slots__ = ("name", "description", "rules", "create_index", "modify_index")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    CREATE_INDEX_FIELD_NUMBER: _ClassVar[int]
    MODIFY_INDEX_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    rules: str
    create_index: int
    modify_index: int
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., rules: _Optional[str] = ..., create_index: _Optional[int] = ..., modify_index: _Optional[int] = ...) -> None: ...

class Token(_message.Message):
    __slots__ = ("accessor_id", "name", "type", "policies", "create_time", "create_index")
    ACCESSOR_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    POLICIES_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    CREATE_INDEX_FIELD_NUMBER: _ClassVar[int]
    accessor_id: str
    name: str
    type: TokenType
    policies: _containers.RepeatedScalarFieldContainer[str]
    create_time: _timestamp_pb2.Timestamp
    create_index: int
    def __init__(self, accessor_id: _Optional[str] = ..., name: _Optional[str] = ..., type: _Optional[_Union[TokenType, str]] = ..., policies: _Optional[_Iterable[str]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., create_index: _Optional[int] = ...) -> None: ...

class StoredToken(_message.Message):
    __slots__ = ("token", "secret_sha256")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    SECRET_SHA256_FIELD_NUMBER: _ClassVar[int]
    token: Token
    secret_sha256: bytes
    def __init__(self, token: _Optional[_Union[Token, _Mapping]] = ..., secret_sha256: _Optional[bytes] = ...) -> None: ...

class BootstrapRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class BootstrapResponse(_message.Message):
    __slots__ = ("token", "secret_id")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    SECRET_ID_FIELD_NUMBER: _ClassVar[int]
    token: Token
    secret_id: str
    def __init__(self, token: _Optional[_Union[Token, _Mapping]] = ..., secret_id: _Optional[str] = ...) -> None: ...

class ApplyPolicyRequest(_message.Message):
    __slots__ = ("name", "description", "rules")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    rules: str
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., rules: _Optional[str] = ...) -> None: ...

class ApplyPolicyResponse(_message.Message):
    __slots__ = ("policy", "warnings")
    POLICY_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    policy: Policy
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, policy: _Optional[_Union[Policy, _Mapping]] = ..., warnings: _Optional[_Iterable[str]] = ...) -> None: ...

class ListPoliciesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListPoliciesResponse(_message.Message):
    __slots__ = ("policies",)
    POLICIES_FIELD_NUMBER: _ClassVar[int]
    policies: _containers.RepeatedCompositeFieldContainer[Policy]
    def __init__(self, policies: _Optional[_Iterable[_Union[Policy, _Mapping]]] = ...) -> None: ...

class DeletePolicyRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeletePolicyResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CreateTokenRequest(_message.Message):
    __slots__ = ("name", "type", "policies")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    POLICIES_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: TokenType
    policies: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., type: _Optional[_Union[TokenType, str]] = ..., policies: _Optional[_Iterable[str]] = ...) -> None: ...

class CreateTokenResponse(_message.Message):
    __slots__ = ("token", "secret_id")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    SECRET_ID_FIELD_NUMBER: _ClassVar[int]
    token: Token
    secret_id: str
    def __init__(self, token: _Optional[_Union[Token, _Mapping]] = ..., secret_id: _Optional[str] = ...) -> None: ...

class ListTokensRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListTokensResponse(_message.Message):
    __slots__ = ("tokens",)
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    tokens: _containers.RepeatedCompositeFieldContainer[Token]
    def __init__(self, tokens: _Optional[_Iterable[_Union[Token, _Mapping]]] = ...) -> None: ...

class RevokeTokenRequest(_message.Message):
    __slots__ = ("accessor_id",)
    ACCESSOR_ID_FIELD_NUMBER: _ClassVar[int]
    accessor_id: str
    def __init__(self, accessor_id: _Optional[str] = ...) -> None: ...

class RevokeTokenResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetSelfTokenRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetSelfTokenResponse(_message.Message):
    __slots__ = ("token",)
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    token: Token
    def __init__(self, token: _Optional[_Union[Token, _Mapping]] = ...) -> None: ...
