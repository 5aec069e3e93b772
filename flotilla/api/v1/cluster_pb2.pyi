from flotilla.api.v1 import meta_pb2 as _meta_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Cluster(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "spec", "status")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    spec: ClusterSpec
    status: ClusterStatus
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[ClusterSpec, _Mapping]] = ..., status: _Optional[_Union[ClusterStatus, _Mapping]] = ...) -> None: ...

class ClusterSpec(_message.Message):
    __slots__ = ("id", "sync_mode", "api_endpoint", "secret_ref", "impersonator_secret_ref", "insecure_skip_tls_verification", "proxy_url", "proxy_header", "provider", "region", "zone", "zones", "taints", "resource_models")
    class ProxyHeaderEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    SYNC_MODE_FIELD_NUMBER: _ClassVar[int]
    API_ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    SECRET_REF_FIELD_NUMBER: _ClassVar[int]
    IMPERSONATOR_SECRET_REF_FIELD_NUMBER: _ClassVar[int]
    INSECURE_SKIP_TLS_VERIFICATION_FIELD_NUMBER: _ClassVar[int]
    PROXY_URL_FIELD_NUMBER: _ClassVar[int]
    PROXY_HEADER_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    REGION_FIELD_NUMBER: _ClassVar[int]
    ZONE_FIELD_NUMBER: _ClassVar[int]
    ZONES_FIELD_NUMBER: _ClassVar[int]
    TAINTS_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_MODELS_FIELD_NUMBER: _ClassVar[int]
    id: str
    sync_mode: str
    api_endpoint: str
    secret_ref: LocalSecretReference
    impersonator_secret_ref: LocalSecretReference
    insecure_skip_tls_verification: bool
    proxy_url: str
    proxy_header: _containers.ScalarMap[str, str]
    provider: str
    region: str
    zone: str
    zones: _containers.RepeatedScalarFieldContainer[str]
    taints: _containers.RepeatedCompositeFieldContainer[_meta_pb2.Taint]
    resource_models: _containers.RepeatedCompositeFieldContainer[ResourceModel]
    def __init__(self, id: _Optional[str] = ..., sync_mode: _Optional[str] = ..., api_endpoint: _Optional[str] = ..., secret_ref: _Optional[_Union[LocalSecretReference, _Mapping]] = ..., impersonator_secret_ref: _Optional[_Union[LocalSecretReference, _Mapping]] = ..., insecure_skip_tls_verification: _Optional[bool] = ..., proxy_url: _Optional[str] = ..., proxy_header: _Optional[_Mapping[str, str]] = ..., provider: _Optional[str] = ..., region: _Optional[str] = ..., zone: _Optional[str] = ..., zones: _Optional[_Iterable[str]] = ..., taints: _Optional[_Iterable[_Union[_meta_pb2.Taint, _Mapping]]] = ..., resource_models: _Optional[_Iterable[_Union[ResourceModel, _Mapping]]] = ...) -> None: ...

class LocalSecretReference(_message.Message):
    __slots__ = ("namespace", "name")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class ResourceModel(_message.Message):
    __slots__ = ("grade", "ranges")
    GRADE_FIELD_NUMBER: _ClassVar[int]
    RANGES_FIELD_NUMBER: _ClassVar[int]
    grade: int
    ranges: _containers.RepeatedCompositeFieldContainer[ResourceModelRange]
    def __init__(self, grade: _Optional[int] = ..., ranges: _Optional[_Iterable[_Union[ResourceModelRange, _Mapping]]] = ...) -> None: ...

class ResourceModelRange(_message.Message):
    __slots__ = ("name", "min", "max")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MIN_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    name: str
    min: str
    max: str
    def __init__(self, name: _Optional[str] = ..., min: _Optional[str] = ..., max: _Optional[str] = ...) -> None: ...

class ClusterStatus(_message.Message):
    __slots__ = ("kubernetes_version", "api_enablements", "conditions", "node_summary", "resource_summary", "remedy_actions")
    KUBERNETES_VERSION_FIELD_NUMBER: _ClassVar[int]
    API_ENABLEMENTS_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    NODE_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    REMEDY_ACTIONS_FIELD_NUMBER: _ClassVar[int]
    kubernetes_version: str
    api_enablements: _containers.RepeatedCompositeFieldContainer[APIEnablement]
    conditions: _containers.RepeatedCompositeFieldContainer[_meta_pb2.Condition]
    node_summary: NodeSummary
    resource_summary: ResourceSummary
    remedy_actions: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, kubernetes_version: _Optional[str] = ..., api_enablements: _Optional[_Iterable[_Union[APIEnablement, _Mapping]]] = ..., conditions: _Optional[_Iterable[_Union[_meta_pb2.Condition, _Mapping]]] = ..., node_summary: _Optional[_Union[NodeSummary, _Mapping]] = ..., resource_summary: _Optional[_Union[ResourceSummary, _Mapping]] = ..., remedy_actions: _Optional[_Iterable[str]] = ...) -> None: ...

class APIEnablement(_message.Message):
    __slots__ = ("group_version", "resources")
    GROUP_VERSION_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    group_version: str
    resources: _containers.RepeatedCompositeFieldContainer[APIResource]
    def __init__(self, group_version: _Optional[str] = ..., resources: _Optional[_Iterable[_Union[APIResource, _Mapping]]] = ...) -> None: ...

class APIResource(_message.Message):
    __slots__ = ("name", "kind")
    NAME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    name: str
    kind: str
    def __init__(self, name: _Optional[str] = ..., kind: _Optional[str] = ...) -> None: ...

class NodeSummary(_message.Message):
    __slots__ = ("total_num", "ready_num")
    TOTAL_NUM_FIELD_NUMBER: _ClassVar[int]
    READY_NUM_FIELD_NUMBER: _ClassVar[int]
    total_num: int
    ready_num: int
    def __init__(self, total_num: _Optional[int] = ..., ready_num: _Optional[int] = ...) -> None: ...

class ResourceSummary(_message.Message):
    __slots__ = ("allocatable", "allocating", "allocated", "allocatable_modelings")
    class AllocatableEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class AllocatingEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class AllocatedEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ALLOCATABLE_FIELD_NUMBER: _ClassVar[int]
    ALLOCATING_FIELD_NUMBER: _ClassVar[int]
    ALLOCATED_FIELD_NUMBER: _ClassVar[int]
    ALLOCATABLE_MODELINGS_FIELD_NUMBER: _ClassVar[int]
    allocatable: _containers.ScalarMap[str, str]
    allocating: _containers.ScalarMap[str, str]
    allocated: _containers.ScalarMap[str, str]
    allocatable_modelings: _containers.RepeatedCompositeFieldContainer[AllocatableModeling]
    def __init__(self, allocatable: _Optional[_Mapping[str, str]] = ..., allocating: _Optional[_Mapping[str, str]] = ..., allocated: _Optional[_Mapping[str, str]] = ..., allocatable_modelings: _Optional[_Iterable[_Union[AllocatableModeling, _Mapping]]] = ...) -> None: ...

class AllocatableModeling(_message.Message):
    __slots__ = ("grade", "count")
    GRADE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    grade: int
    count: int
    def __init__(self, grade: _Optional[int] = ..., count: _Optional[int] = ...) -> None: ...
