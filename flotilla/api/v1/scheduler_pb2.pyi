from flotilla.api.v1 import work_pb2 as _work_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ExplainRequest(_message.Message):
    __slots__ = ("kind", "namespace", "name")
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    kind: str
    namespace: str
    name: str
    def __init__(self, kind: _Optional[str] = ..., namespace: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class FilteredCluster(_message.Message):
    __slots__ = ("cluster", "plugin", "reason")
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    PLUGIN_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    cluster: str
    plugin: str
    reason: str
    def __init__(self, cluster: _Optional[str] = ..., plugin: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ScheduleDecision(_message.Message):
    __slots__ = ("clusters", "filtered", "error", "reason", "affinity_name", "current", "trigger", "workload")
    CLUSTERS_FIELD_NUMBER: _ClassVar[int]
    FILTERED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    AFFINITY_NAME_FIELD_NUMBER: _ClassVar[int]
    CURRENT_FIELD_NUMBER: _ClassVar[int]
    TRIGGER_FIELD_NUMBER: _ClassVar[int]
    WORKLOAD_FIELD_NUMBER: _ClassVar[int]
    clusters: _containers.RepeatedCompositeFieldContainer[_work_pb2.TargetCluster]
    filtered: _containers.RepeatedCompositeFieldContainer[FilteredCluster]
    error: str
    reason: str
    affinity_name: str
    current: _containers.RepeatedCompositeFieldContainer[_work_pb2.TargetCluster]
    trigger: str
    workload: bool
    def __init__(self, clusters: _Optional[_Iterable[_Union[_work_pb2.TargetCluster, _Mapping]]] = ..., filtered: _Optional[_Iterable[_Union[FilteredCluster, _Mapping]]] = ..., error: _Optional[str] = ..., reason: _Optional[str] = ..., affinity_name: _Optional[str] = ..., current: _Optional[_Iterable[_Union[_work_pb2.TargetCluster, _Mapping]]] = ..., trigger: _Optional[str] = ..., workload: _Optional[bool] = ...) -> None: ...

class WhatIfRequest(_message.Message):
    __slots__ = ("clusters",)
    CLUSTERS_FIELD_NUMBER: _ClassVar[int]
    clusters: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, clusters: _Optional[_Iterable[str]] = ...) -> None: ...

class BindingForecast(_message.Message):
    __slots__ = ("kind", "namespace", "name", "before", "after", "error", "reason")
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    kind: str
    namespace: str
    name: str
    before: _containers.RepeatedCompositeFieldContainer[_work_pb2.TargetCluster]
    after: _containers.RepeatedCompositeFieldContainer[_work_pb2.TargetCluster]
    error: str
    reason: str
    def __init__(self, kind: _Optional[str] = ..., namespace: _Optional[str] = ..., name: _Optional[str] = ..., before: _Optional[_Iterable[_Union[_work_pb2.TargetCluster, _Mapping]]] = ..., after: _Optional[_Iterable[_Union[_work_pb2.TargetCluster, _Mapping]]] = ..., error: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class WhatIfReport(_message.Message):
    __slots__ = ("failed_clusters", "bindings", "unaffected")
    FAILED_CLUSTERS_FIELD_NUMBER: _ClassVar[int]
    BINDINGS_FIELD_NUMBER: _ClassVar[int]
    UNAFFECTED_FIELD_NUMBER: _ClassVar[int]
    failed_clusters: _containers.RepeatedScalarFieldContainer[str]
    bindings: _containers.RepeatedCompositeFieldContainer[BindingForecast]
    unaffected: int
    def __init__(self, failed_clusters: _Optional[_Iterable[str]] = ..., bindings: _Optional[_Iterable[_Union[BindingForecast, _Mapping]]] = ..., unaffected: _Optional[int] = ...) -> None: ...
