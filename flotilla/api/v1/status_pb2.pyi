from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GetClusterHealthRequest(_message.Message):
    __slots__ = ("cluster",)
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    cluster: str
    def __init__(self, cluster: _Optional[str] = ...) -> None: ...

class ProbeRecord(_message.Message):
    __slots__ = ("time", "online", "healthy", "observed_status", "observed_reason", "published_status", "published_reason", "error")
    TIME_FIELD_NUMBER: _ClassVar[int]
    ONLINE_FIELD_NUMBER: _ClassVar[int]
    HEALTHY_FIELD_NUMBER: _ClassVar[int]
    OBSERVED_STATUS_FIELD_NUMBER: _ClassVar[int]
    OBSERVED_REASON_FIELD_NUMBER: _ClassVar[int]
    PUBLISHED_STATUS_FIELD_NUMBER: _ClassVar[int]
    PUBLISHED_REASON_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    time: str
    online: bool
    healthy: bool
    observed_status: str
    observed_reason: str
    published_status: str
    published_reason: str
    error: str
    def __init__(self, time: _Optional[str] = ..., online: _Optional[bool] = ..., healthy: _Optional[bool] = ..., observed_status: _Optional[str] = ..., observed_reason: _Optional[str] = ..., published_status: _Optional[str] = ..., published_reason: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...

class ClusterHealthReport(_message.Message):
    __slots__ = ("cluster", "observed_status", "observed_since", "seconds_until_visible", "probes")
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    OBSERVED_STATUS_FIELD_NUMBER: _ClassVar[int]
    OBSERVED_SINCE_FIELD_NUMBER: _ClassVar[int]
    SECONDS_UNTIL_VISIBLE_FIELD_NUMBER: _ClassVar[int]
    PROBES_FIELD_NUMBER: _ClassVar[int]
    cluster: str
    observed_status: str
    observed_since: str
    seconds_until_visible: float
    probes: _containers.RepeatedCompositeFieldContainer[ProbeRecord]
    def __init__(self, cluster: _Optional[str] = ..., observed_status: _Optional[str] = ..., observed_since: _Optional[str] = ..., seconds_until_visible: _Optional[float] = ..., probes: _Optional[_Iterable[_Union[ProbeRecord, _Mapping]]] = ...) -> None: ...
