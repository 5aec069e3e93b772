import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from flotilla.api.v1 import meta_pb2 as _meta_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class WorkloadRebalancer(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "spec", "status")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    spec: WorkloadRebalancerSpec
    status: WorkloadRebalancerStatus
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[WorkloadRebalancerSpec, _Mapping]] = ..., status: _Optional[_Union[WorkloadRebalancerStatus, _Mapping]] = ...) -> None: ...

class WorkloadRebalancerSpec(_message.Message):
    __slots__ = ("workloads", "ttl_seconds_after_finished")
    WORKLOADS_FIELD_NUMBER: _ClassVar[int]
    TTL_SECONDS_AFTER_FINISHED_FIELD_NUMBER: _ClassVar[int]
    workloads: _containers.RepeatedCompositeFieldContainer[RebalanceObjectReference]
    ttl_seconds_after_finished: int
    def __init__(self, workloads: _Optional[_Iterable[_Union[RebalanceObjectReference, _Mapping]]] = ..., ttl_seconds_after_finished: _Optional[int] = ...) -> None: ...

class RebalanceObjectReference(_message.Message):
    __slots__ = ("api_version", "kind", "namespace", "name")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    namespace: str
    name: str
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., namespace: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class WorkloadRebalancerStatus(_message.Message):
    __slots__ = ("observed_workloads", "observed_generation", "finish_time")
    OBSERVED_WORKLOADS_FIELD_NUMBER: _ClassVar[int]
    OBSERVED_GENERATION_FIELD_NUMBER: _ClassVar[int]
    FINISH_TIME_FIELD_NUMBER: _ClassVar[int]
    observed_workloads: _containers.RepeatedCompositeFieldContainer[ObservedWorkload]
    observed_generation: int
    finish_time: _timestamp_pb2.Timestamp
    def __init__(self, observed_workloads: _Optional[_Iterable[_Union[ObservedWorkload, _Mapping]]] = ..., observed_generation: _Optional[int] = ..., finish_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ObservedWorkload(_message.Message):
    __slots__ = ("workload", "result", "reason")
    WORKLOAD_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    workload: RebalanceObjectReference
    result: str
    reason: str
    def __init__(self, workload: _Optional[_Union[RebalanceObjectReference, _Mapping]] = ..., result: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...
