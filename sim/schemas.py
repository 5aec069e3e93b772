"""The structure of each served type, for OpenAPI documents and strict field validation.

Built-in types come from kubernetes_asyncio's generated models (`openapi_types` and
`attribute_map` describe every field of every Kubernetes type), so nothing is vendored; custom
resources use their CRD's openAPIV3Schema.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from kubernetes_asyncio.client import models

from sim import errors
from sim.catalog import ResourceType

Obj = dict[str, Any]
_PRIMITIVES: dict[str, Obj] = {
    "str": {"type": "string"}, "int": {"type": "integer", "format": "int64"}, "bool": {"type": "boolean"},
    "float": {"type": "number", "format": "double"}, "datetime": {"type": "string", "format": "date-time"},
    "date": {"type": "string", "format": "date"},
    # IntOrString, RawExtension, JSON, Quantity-like free values.
    "object": {"x-kubernetes-preserve-unknown-fields": True},
}
_LIST = re.compile(r"^list\[(.+)\]$")
_DICT = re.compile(r"^dict\(str, (.+)\)$")


def model_of(t: ResourceType, subresource: str | None = None) -> str | None:
    """The kubernetes_asyncio model name of a built-in type (Scale for /scale), None if unknown."""
    if subresource == "scale":
        return "V1Scale"
    if t.custom:
        return None
    version = t.version[:1].upper() + t.version[1:]
    group = (t.group.split(".")[0] or "core").capitalize()
    for name in (f"{version}{t.kind}", f"{group}{version}{t.kind}"):
        if _model(name) is not None:
            return name
    return None


def _model(name: str) -> Any:
    found = getattr(models, name, None)
    return found if isinstance(found, type) and hasattr(found, "openapi_types") else None


@functools.cache
def _fields(name: str) -> dict[str, str]:
    """JSON field name -> type string of model `name`."""
    model = _model(name)
    return {model.attribute_map[attr]: kind for attr, kind in model.openapi_types.items()}


# -- OpenAPI schemas ------------------------------------------------------------------------------

def components(roots: list[str]) -> dict[str, Obj]:
    """Schemas of the models `roots` and of every model they refer to, by model name."""
    found: dict[str, Obj] = {}
    pending = list(roots)
    while pending:
        name = pending.pop()
        if name in found or _model(name) is None:
            continue
        properties = {}
        for field, kind in _fields(name).items():
            properties[field] = _schema_of(kind, pending)
        found[name] = {"type": "object", "properties": properties}
    return found


def _schema_of(kind: str, pending: list[str]) -> Obj:
    if kind in _PRIMITIVES:
        return dict(_PRIMITIVES[kind])
    if match := _LIST.match(kind):
        return {"type": "array", "items": _schema_of(match.group(1), pending)}
    if match := _DICT.match(kind):
        return {"type": "object", "additionalProperties": _schema_of(match.group(1), pending)}
    pending.append(kind)
    return {"$ref": f"#/components/schemas/{kind}"}


# -- strict field validation ----------------------------------------------------------------------

def unknown_fields(t: ResourceType, body: Any, subresource: str | None = None, crd: Obj | None = None,
                   patch: bool = False) -> list[str]:
    """Paths of the fields in `body` the type does not declare ("spec.foo", "spec.containers[0].x").
    A patch's directives ($setElementOrder/..., $patch, ...) are not fields."""
    unknown: list[str] = []
    name = model_of(t, subresource)
    if name is not None:
        _check_model(name, body, "", unknown, patch)
    elif t.custom and crd is not None:
        schema = _crd_schema(crd, t.version)
        if schema is not None:
            _check_schema(schema, body, "", unknown, patch, top=True)
    return unknown


def _join(path: str, field: str) -> str:
    return f"{path}.{field}" if path else field


def _check_model(name: str, value: Any, path: str, unknown: list[str], patch: bool) -> None:
    if not isinstance(value, dict):
        return
    fields = _fields(name)
    for key, item in value.items():
        if patch and key.startswith("$"):
            continue
        kind = fields.get(key)
        if kind is None:
            unknown.append(_join(path, key))
        elif item is not None:
            _check_kind(kind, item, _join(path, key), unknown, patch)


def _check_kind(kind: str, value: Any, path: str, unknown: list[str], patch: bool) -> None:
    if kind in _PRIMITIVES:
        return
    if match := _LIST.match(kind):
        for index, item in enumerate(value if isinstance(value, list) else []):
            _check_kind(match.group(1), item, f"{path}[{index}]", unknown, patch)
    elif match := _DICT.match(kind):
        for key, item in (value if isinstance(value, dict) else {}).items():
            _check_kind(match.group(1), item, f"{path}.{key}", unknown, patch)
    else:
        _check_model(kind, value, path, unknown, patch)


def _crd_schema(crd: Obj, version: str) -> Obj | None:
    spec = crd.get("spec") or {}
    for entry in spec.get("versions") or []:
        if entry.get("name") == version:
            schema = (entry.get("schema") or {}).get("openAPIV3Schema")
            return schema if isinstance(schema, dict) else None
    return None


def _check_schema(schema: Obj, value: Any, path: str, unknown: list[str], patch: bool, top: bool = False) -> None:
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            _check_schema(schema["items"], item, f"{path}[{index}]", unknown, patch)
        return
    if not isinstance(value, dict):
        return
    properties = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    preserve = schema.get("x-kubernetes-preserve-unknown-fields") or extra is True
    for key, item in value.items():
        if (patch and key.startswith("$")) or item is None:
            continue
        if top and key in ("apiVersion", "kind"):
            continue
        if top and key == "metadata":
            _check_model("V1ObjectMeta", item, key, unknown, patch)
        elif key in properties:
            _check_schema(properties[key], item, _join(path, key), unknown, patch)
        elif isinstance(extra, dict):
            _check_schema(extra, item, f"{path}.{key}" if path else key, unknown, patch)
        elif not preserve:
            unknown.append(_join(path, key))


def check_fields(t: ResourceType, body: Any, directive: str | None, subresource: str | None = None,
                 crd: Obj | None = None, patch: bool = False) -> list[str]:
    """Apply a write's `fieldValidation` directive: Strict raises a 400 naming the unknown fields,
    Warn (the default, as on a real server) returns them as warnings, Ignore skips the check."""
    directive = directive or "Warn"
    if directive not in ("Strict", "Warn", "Ignore"):
        raise errors.bad_request(f"fieldValidation: Unsupported value: {directive!r}: supported values: "
                                 '"Ignore", "Strict", "Warn"')
    if directive == "Ignore" or not isinstance(body, dict):
        return []
    unknown = [f'unknown field "{path}"' for path in unknown_fields(t, body, subresource, crd, patch)]
    if unknown and directive == "Strict":
        kind = "Scale" if subresource == "scale" else t.kind
        version = "v1" if subresource == "scale" else t.version
        raise errors.bad_request(f'{kind} in version "{version}" cannot be handled as a {kind}: '
                                 f"strict decoding error: {', '.join(unknown)}")
    return unknown
