"""The OpenAPI documents kubectl reads: `/openapi/v3` (an index of group-versions),
`/openapi/v3/<api/v1 | apis/<group>/<version>>`, and an empty `/openapi/v2`.

kubectl uses them to decide how to validate and patch: a PATCH operation listing the
`fieldValidation` parameter makes `kubectl apply` ask the server for strict field validation
(sim/schemas.py does it), and one accepting strategic-merge-patch+json, with the kind's schema
in components, makes it compute its patch from these schemas. `dryRun` is not listed: the
simulator refuses dry runs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from sim import schemas
from sim.catalog import Catalog, ResourceType

Obj = dict[str, Any]
CrdLookup = Callable[[ResourceType], Obj | None]
_PATCH_TYPES = ("application/apply-patch+yaml", "application/merge-patch+json")
_STRATEGIC = "application/strategic-merge-patch+json"
_cache: dict[tuple[Any, ...], bytes] = {}
_CACHE_LIMIT = 256


def index(catalog: Catalog, crd_of: CrdLookup, git_version: str) -> Obj:
    paths = {}
    for group, versions in catalog.group_versions().items():
        for version in versions:
            path = _gv_path(group, version)
            digest = hashlib.sha512(document(catalog, path, crd_of, git_version) or b"").hexdigest().upper()
            paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
    return {"paths": paths}


def document(catalog: Catalog, path: str, crd_of: CrdLookup, git_version: str) -> bytes | None:
    """The encoded document of group-version `path` ("api/v1", "apis/apps/v1"), None if not served."""
    parts = path.strip("/").split("/")
    if parts[:1] == ["api"] and len(parts) == 2:
        group, version = "", parts[1]
    elif parts[:1] == ["apis"] and len(parts) == 3:
        group, version = parts[1], parts[2]
    else:
        return None
    types = sorted(catalog.in_group_version(group, version), key=lambda t: t.plural)
    if not types:
        return None
    crds = {t.plural: crd_of(t) for t in types if t.custom}
    key = (path, git_version, tuple(types), tuple((p, (c or {}).get("metadata", {}).get("resourceVersion"))
                                                  for p, c in sorted(crds.items())))
    if key not in _cache:
        if len(_cache) >= _CACHE_LIMIT:
            _cache.clear()
        _cache[key] = json.dumps(_build(group, version, types, crds, git_version)).encode()
    return _cache[key]


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _build(group: str, version: str, types: list[ResourceType], crds: dict[str, Obj | None],
           git_version: str) -> Obj:
    roots = [name for t in types if (name := schemas.model_of(t))]
    if any("scale" in t.subresources for t in types):
        roots.append("V1Scale")
    components = schemas.components(roots)
    paths: Obj = {}
    for t in types:
        name = schemas.model_of(t)
        if name is None:
            name = f"{t.group}.{t.version}.{t.kind}"
            components[name] = _custom_schema(t, crds.get(t.plural))
            components.update(schemas.components(["V1ObjectMeta"]))
        components[name]["x-kubernetes-group-version-kind"] = [_gvk(t)]
        paths.update(_paths(t, name))
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": git_version},
            "paths": paths, "components": {"schemas": components}}


def _gvk(t: ResourceType) -> Obj:
    return {"group": t.group, "version": t.version, "kind": t.kind}


def _custom_schema(t: ResourceType, crd: Obj | None) -> Obj:
    version = next((v for v in ((crd or {}).get("spec") or {}).get("versions") or [] if v.get("name") == t.version),
                   {})
    schema = dict((version.get("schema") or {}).get("openAPIV3Schema") or {"type": "object"})
    properties = dict(schema.get("properties") or {})
    properties.update({"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                       "metadata": {"$ref": "#/components/schemas/V1ObjectMeta"}})
    schema["properties"] = properties
    return schema


def _paths(t: ResourceType, schema: str) -> Obj:
    base = f"/apis/{t.group}/{t.version}" if t.group else f"/api/{t.version}"
    collection = f"{base}/namespaces/{{namespace}}/{t.plural}" if t.namespaced else f"{base}/{t.plural}"
    scope = [_param("namespace", "path")] if t.namespaced else []
    ref = {"$ref": f"#/components/schemas/{schema}"}
    gvk = _gvk(t)
    patch_types = (*_PATCH_TYPES, *(() if t.custom else (_STRATEGIC,)))
    paths: Obj = {
        collection: {
            "parameters": scope,
            "get": _operation("list", gvk, ref, []),
            "post": _operation("post", gvk, ref, _write_params(), body=("application/json", "application/yaml")),
            "delete": _operation("deletecollection", gvk, ref, []),
        },
        f"{collection}/{{name}}": {
            "parameters": [_param("name", "path"), *scope],
            "get": _operation("get", gvk, ref, []),
            "put": _operation("put", gvk, ref, _write_params(), body=("application/json", "application/yaml")),
            "patch": _operation("patch", gvk, ref, [*_write_params(), _param("force", "query", "boolean")],
                                body=patch_types),
            "delete": _operation("delete", gvk, ref, []),
        },
    }
    if t.namespaced:
        paths[f"{base}/{t.plural}"] = {"get": _operation("list", gvk, ref, [])}
    for sub in t.subresources:
        sub_gvk = {"group": "autoscaling", "version": "v1", "kind": "Scale"} if sub == "scale" else gvk
        sub_ref = {"$ref": "#/components/schemas/V1Scale"} if sub == "scale" else ref
        paths[f"{collection}/{{name}}/{sub}"] = {
            "parameters": [_param("name", "path"), *scope],
            "get": _operation("get", sub_gvk, sub_ref, []),
            "put": _operation("put", sub_gvk, sub_ref, _write_params(), body=("application/json",)),
            "patch": _operation("patch", sub_gvk, sub_ref, [*_write_params(), _param("force", "query", "boolean")],
                                body=patch_types),
        }
    return paths


def _param(name: str, where: str, kind: str = "string") -> Obj:
    return {"name": name, "in": where, "schema": {"type": kind, "uniqueItems": True},
            **({"required": True} if where == "path" else {})}


def _write_params() -> list[Obj]:
    return [_param("fieldManager", "query"), _param("fieldValidation", "query")]


def _operation(action: str, gvk: Obj, ref: Obj, parameters: list[Obj], body: tuple[str, ...] = ()) -> Obj:
    operation: Obj = {
        "x-kubernetes-action": action, "x-kubernetes-group-version-kind": gvk, "parameters": parameters,
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": ref}}}},
    }
    if body:
        operation["requestBody"] = {"content": {media: {"schema": ref} for media in body}, "required": True}
    return operation


V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"  # what kubectl asks for
# What the API server answers with ('@' is not allowed in a media type Go can parse).
_V2_PROTOBUF_ANSWER = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


def v2_document(accept: str, git_version: str) -> tuple[bytes, str]:
    """An OpenAPI v2 document describing nothing: kubectl falls back to it for kinds the v3 index
    lacks, and an empty one makes it skip client-side validation and report the kind as not
    served ("no matches for kind"), as against a real server. Protobuf (empty message) when
    asked for, as kubectl does; JSON otherwise."""
    if V2_PROTOBUF in accept:
        return b"", _V2_PROTOBUF_ANSWER
    body = {"swagger": "2.0", "info": {"title": "Kubernetes", "version": git_version}, "paths": {}, "definitions": {}}
    return json.dumps(body).encode(), "application/json"
