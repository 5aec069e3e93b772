from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GetEvictionStateRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PendingEviction(_message.Message):
    __slots__ = ("binding", "cluster", "deadline")
    BINDING_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    binding: str
    cluster: str
    deadline: str
    def __init__(self, binding: _Optional[str] = ..., cluster: _Optional[str] = ..., deadline: _Optional[str] = ...) -> None: ...

class HeldEviction(_message.Message):
    __slots__ = ("binding", "cluster", "reason")
    BINDING_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    binding: str
    cluster: str
    reason: str
    def __init__(self, binding: _Optional[str] = ..., cluster: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class RegionProtection(_message.Message):
    __slots__ = ("region", "clusters", "unhealthy", "state", "rate")
    REGION_FIELD_NUMBER: _ClassVar[int]
    CLUSTERS_FIELD_NUMBER: _ClassVar[int]
    UNHEALTHY_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    RATE_FIELD_NUMBER: _ClassVar[int]
    region: str
    clusters: int
    unhealthy: int
    state: str
    rate: float
    def __init__(self, region: _Optional[str] = ..., clusters: _Optional[int] = ..., unhealthy: _Optional[int] = ..., state: _Optional[str] = ..., rate: _Optional[float] = ...) -> None: ...

class EvictionState(_message.Message):
    __slots__ = ("pending", "held", "regions", "every_cluster_unhealthy", "admitted_clusters")
    PENDING_FIELD_NUMBER: _ClassVar[int]
    HELD_FIELD_NUMBER: _ClassVar[int]
    REGIONS_FIELD_NUMBER: _ClassVar[int]
    EVERY_CLUSTER_UNHEALTHY_FIELD_NUMBER: _ClassVar[int]
    ADMITTED_CLUSTERS_FIELD_NUMBER: _ClassVar[int]
    pending: _containers.RepeatedCompositeFieldContainer[PendingEviction]
    held: _containers.RepeatedCompositeFieldContainer[HeldEviction]
    regions: _containers.RepeatedCompositeFieldContainer[RegionProtection]
    every_cluster_unhealthy: bool
    admitted_clusters: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, pending: _Optional[_Iterable[_Union[PendingEviction, _Mapping]]] = ..., held: _Optional[_Iterable[_Union[HeldEviction, _Mapping]]] = ..., regions: _Optional[_Iterable[_Union[RegionProtection, _Mapping]]] = ..., every_cluster_unhealthy: _Optional[bool] = ..., admitted_clusters: _Optional[_Iterable[str]] = ...) -> None: ...
