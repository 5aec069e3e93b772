import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from flotilla.api.v1 import meta_pb2 as _meta_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Lease(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "spec")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    spec: LeaseSpec
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[LeaseSpec, _Mapping]] = ...) -> None: ...

class LeaseSpec(_message.Message):
    __slots__ = ("holder_identity", "lease_duration_seconds", "acquire_time", "renew_time", "lease_transitions", "strategy", "preferred_holder")
    HOLDER_IDENTITY_FIELD_NUMBER: _ClassVar[int]
    LEASE_DURATION_SECONDS_FIELD_NUMBER: _ClassVar[int]
    ACQUIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    RENEW_TIME_FIELD_NUMBER: _ClassVar[int]
    LEASE_TRANSITIONS_FIELD_NUMBER: _ClassVar[int]
    STRATEGY_FIELD_NUMBER: _ClassVar[int]
    PREFERRED_HOLDER_FIELD_NUMBER: _ClassVar[int]
    holder_identity: str
    lease_duration_seconds: int
    acquire_time: _timestamp_pb2.Timestamp
    renew_time: _timestamp_pb2.Timestamp
    lease_transitions: int
    strategy: str
    preferred_holder: str
    def __init__(self, holder_identity: _Optional[str] = ..., lease_duration_seconds: _Optional[int] = ..., acquire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., renew_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., lease_transitions: _Optional[int] = ..., strategy: _Optional[str] = ..., preferred_holder: _Optional[str] = ...) -> None: ...
