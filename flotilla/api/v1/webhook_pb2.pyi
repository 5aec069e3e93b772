from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AdmissionRequest(_message.Message):
    __slots__ = ("object_json",)
    OBJECT_JSON_FIELD_NUMBER: _ClassVar[int]
    object_json: str
    def __init__(self, object_json: _Optional[str] = ...) -> None: ...

class FieldViolation(_message.Message):
    __slots__ = ("path", "reason")
    PATH_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    path: str
    reason: str
    def __init__(self, path: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class AdmissionResponse(_message.Message):
    __slots__ = ("allowed", "object_json", "result", "violations", "warnings")
    ALLOWED_FIELD_NUMBER: _ClassVar[int]
    OBJECT_JSON_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    VIOLATIONS_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    allowed: bool
    object_json: str
    result: str
    violations: _containers.RepeatedCompositeFieldContainer[FieldViolation]
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, allowed: _Optional[bool] = ..., object_json: _Optional[str] = ..., result: _Optional[str] = ..., violations: _Optional[_Iterable[_Union[FieldViolation, _Mapping]]] = ..., warnings: _Optional[_Iterable[str]] = ...) -> None: ...

class AdmissionBatchRequest(_message.Message):
    __slots__ = ("objects_json", "dry_run")
    OBJECTS_JSON_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    objects_json: _containers.RepeatedScalarFieldContainer[bytes]
    dry_run: bool
    def __init__(self, objects_json: _Optional[_Iterable[bytes]] = ..., dry_run: _Optional[bool] = ...) -> None: ...

class AdmissionBatchResult(_message.Message):
    __slots__ = ("response", "error_code", "error")
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    response: AdmissionResponse
    error_code: str
    error: str
    def __init__(self, response: _Optional[_Union[AdmissionResponse, _Mapping]] = ..., error_code: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...

class AdmissionBatchResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[AdmissionBatchResult]
    def __init__(self, results: _Optional[_Iterable[_Union[AdmissionBatchResult, _Mapping]]] = ...) -> None: ...

class DeleteRequest(_message.Message):
    __slots__ = ("api_version", "kind", "namespace", "name", "resource_version")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    namespace: str
    name: str
    resource_version: str
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., namespace: _Optional[str] = ..., name: _Optional[str] = ..., resource_version: _Optional[str] = ...) -> None: ...

class DeleteResponse(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: str
    def __init__(self, result: _Optional[str] = ...) -> None: ...

class AccessReviewRequest(_message.Message):
    __slots__ = ("verb", "api_group", "resource", "subresource", "namespace", "name", "user", "groups")
    VERB_FIELD_NUMBER: _ClassVar[int]
    API_GROUP_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    SUBRESOURCE_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    verb: str
    api_group: str
    resource: str
    subresource: str
    namespace: str
    name: str
    user: str
    groups: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, verb: _Optional[str] = ..., api_group: _Optional[str] = ..., resource: _Optional[str] = ..., subresource: _Optional[str] = ..., namespace: _Optional[str] = ..., name: _Optional[str] = ..., user: _Optional[str] = ..., groups: _Optional[_Iterable[str]] = ...) -> None: ...

class AccessReviewResponse(_message.Message):
    __slots__ = ("allowed", "reason")
    ALLOWED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    allowed: bool
    reason: str
    def __init__(self, allowed: _Optional[bool] = ..., reason: _Optional[str] = ...) -> None: ...
