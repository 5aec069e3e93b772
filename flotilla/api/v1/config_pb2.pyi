from flotilla.api.v1 import meta_pb2 as _meta_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ResourceInterpreterCustomization(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "spec")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    spec: ResourceInterpreterCustomizationSpec
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[ResourceInterpreterCustomizationSpec, _Mapping]] = ...) -> None: ...

class ResourceInterpreterCustomizationSpec(_message.Message):
    __slots__ = ("target", "customizations")
    TARGET_FIELD_NUMBER: _ClassVar[int]
    CUSTOMIZATIONS_FIELD_NUMBER: _ClassVar[int]
    target: CustomizationTarget
    customizations: CustomizationRules
    def __init__(self, target: _Optional[_Union[CustomizationTarget, _Mapping]] = ..., customizations: _Optional[_Union[CustomizationRules, _Mapping]] = ...) -> None: ...

class CustomizationTarget(_message.Message):
    __slots__ = ("api_version", "kind")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ...) -> None: ...

class CustomizationRules(_message.Message):
    __slots__ = ("retention", "replica_resource", "replica_revision", "status_reflection", "status_aggregation", "health_interpretation", "dependency_interpretation", "component_resource")
    RETENTION_FIELD_NUMBER: _ClassVar[int]
    REPLICA_RESOURCE_FIELD_NUMBER: _ClassVar[int]
    REPLICA_REVISION_FIELD_NUMBER: _ClassVar[int]
    STATUS_REFLECTION_FIELD_NUMBER: _ClassVar[int]
    STATUS_AGGREGATION_FIELD_NUMBER: _ClassVar[int]
    HEALTH_INTERPRETATION_FIELD_NUMBER: _ClassVar[int]
    DEPENDENCY_INTERPRETATION_FIELD_NUMBER: _ClassVar[int]
    COMPONENT_RESOURCE_FIELD_NUMBER: _ClassVar[int]
    retention: LuaScript
    replica_resource: LuaScript
    replica_revision: LuaScript
    status_reflection: LuaScript
    status_aggregation: LuaScript
    health_interpretation: LuaScript
    dependency_interpretation: LuaScript
    component_resource: LuaScript
    def __init__(self, retention: _Optional[_Union[LuaScript, _Mapping]] = ..., replica_resource: _Optional[_Union[LuaScript, _Mapping]] = ..., replica_revision: _Optional[_Union[LuaScript, _Mapping]] = ..., status_reflection: _Optional[_Union[LuaScript, _Mapping]] = ..., status_aggregation: _Optional[_Union[LuaScript, _Mapping]] = ..., health_interpretation: _Optional[_Union[LuaScript, _Mapping]] = ..., dependency_interpretation: _Optional[_Union[LuaScript, _Mapping]] = ..., component_resource: _Optional[_Union[LuaScript, _Mapping]] = ...) -> None: ...

class LuaScript(_message.Message):
    __slots__ = ("lua_script",)
    LUA_SCRIPT_FIELD_NUMBER: _ClassVar[int]
    lua_script: str
    def __init__(self, lua_script: _Optional[str] = ...) -> None: ...
