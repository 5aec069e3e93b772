from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class KeyRequest(_message.Message):
    __slots__ = ("key",)
    KEY_FIELD_NUMBER: _ClassVar[int]
    key: str
    def __init__(self, key: _Optional[str] = ...) -> None: ...

class KeyValue(_message.Message):
    __slots__ = ("key", "value", "mod_revision")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    MOD_REVISION_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: bytes
    mod_revision: int
    def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ..., mod_revision: _Optional[int] = ...) -> None: ...

class KeyValueReply(_message.Message):
    __slots__ = ("found", "kv")
    FOUND_FIELD_NUMBER: _ClassVar[int]
    KV_FIELD_NUMBER: _ClassVar[int]
    found: bool
    kv: KeyValue
    def __init__(self, found: _Optional[bool] = ..., kv: _Optional[_Union[KeyValue, _Mapping]] = ...) -> None: ...

class RangeReply(_message.Message):
    __slots__ = ("kvs", "revision")
    KVS_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    kvs: _containers.RepeatedCompositeFieldContainer[KeyValue]
    revision: int
    def __init__(self, kvs: _Optional[_Iterable[_Union[KeyValue, _Mapping]]] = ..., revision: _Optional[int] = ...) -> None: ...

class WriteRequest(_message.Message):
    __slots__ = ("key", "value", "mod_revision", "lease")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    MOD_REVISION_FIELD_NUMBER: _ClassVar[int]
    LEASE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: bytes
    mod_revision: int
    lease: int
    def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ..., mod_revision: _Optional[int] = ..., lease: _Optional[int] = ...) -> None: ...

class WriteReply(_message.Message):
    __slots__ = ("succeeded", "revision", "current")
    SUCCEEDED_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    CURRENT_FIELD_NUMBER: _ClassVar[int]
    succeeded: bool
    revision: int
    current: KeyValue
    def __init__(self, succeeded: _Optional[bool] = ..., revision: _Optional[int] = ..., current: _Optional[_Union[KeyValue, _Mapping]] = ...) -> None: ...

class LeaseRequest(_message.Message):
    __slots__ = ("ttl", "lease")
    TTL_FIELD_NUMBER: _ClassVar[int]
    LEASE_FIELD_NUMBER: _ClassVar[int]
    ttl: int
    lease: int
    def __init__(self, ttl: _Optional[int] = ..., lease: _Optional[int] = ...) -> None: ...

class LeaseReply(_message.Message):
    __slots__ = ("lease", "ttl")
    LEASE_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    lease: int
    ttl: int
    def __init__(self, lease: _Optional[int] = ..., ttl: _Optional[int] = ...) -> None: ...

class WatchRequest(_message.Message):
    __slots__ = ("key", "start_revision")
    KEY_FIELD_NUMBER: _ClassVar[int]
    START_REVISION_FIELD_NUMBER: _ClassVar[int]
    key: str
    start_revision: int
    def __init__(self, key: _Optional[str] = ..., start_revision: _Optional[int] = ...) -> None: ...

class WatchEvent(_message.Message):
    __slots__ = ("delete", "kv")
    DELETE_FIELD_NUMBER: _ClassVar[int]
    KV_FIELD_NUMBER: _ClassVar[int]
    delete: bool
    kv: KeyValue
    def __init__(self, delete: _Optional[bool] = ..., kv: _Optional[_Union[KeyValue, _Mapping]] = ...) -> None: ...

class WatchReply(_message.Message):
    __slots__ = ("events",)
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[WatchEvent]
    def __init__(self, events: _Optional[_Iterable[_Union[WatchEvent, _Mapping]]] = ...) -> None: ...
