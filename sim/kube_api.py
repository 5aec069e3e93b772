"""The Kubernetes REST API of one simulated cluster, as served on its own port.

Health (/readyz, /healthz, /livez), /version, discovery, OpenAPI v3 (sim/openapi.py), and
create/get/list/replace/patch/delete (plus status and scale subresources) of every type the
cluster's catalog holds, with Tables for `kubectl get` (sim/tables.py) and field validation
(sim/schemas.py), and watches of every list path (sim/watch.py). Every path needs the
cluster's bearer token. Pagination (`limit`/`continue`) and dry runs are not supported: a list
always returns everything.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import yaml
from aiohttp import web

from flotilla.api import jsonbytes
from sim import errors, openapi, schemas, tables, watch
from sim.catalog import (
    AGGREGATED_DISCOVERY,
    CRD,
    ResourceType,
    aggregated_discovery_document,
    api_group,
    api_group_list,
    api_resource_list,
    api_versions,
    wants_aggregated_discovery,
)
from sim.cluster import SimCluster
from sim.faults import Fault
from sim.state import APPLY_PATCH

_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Target:
    """Where a resource path points."""

    type: ResourceType
    namespace: str | None  # None: all namespaces (lists) or a cluster-scoped type
    name: str | None
    subresource: str | None


def json_response(body: Any, status: int = 200) -> web.Response:
    return web.Response(body=jsonbytes.dumps(body), status=status, content_type="application/json")


def error_response(error: errors.ApiError) -> web.Response:
    return json_response(error.status(), error.code)


def authorized(request: web.Request, cluster: SimCluster) -> bool:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), cluster.token.encode())


async def handle(request: web.Request, cluster: SimCluster, path: str) -> web.StreamResponse:
    """Serve one authenticated request to the cluster (`path` is the request's path)."""
    try:
        return await _dispatch(request, cluster, path)
    except errors.ApiError as e:
        return error_response(e)
    except Exception as e:  # a simulator bug still answers the way an API server would
        log.exception("event=sim-api-error cluster=%s method=%s path=%s", cluster.name, request.method, path)
        return error_response(errors.ApiError(500, "InternalError", f"Internal error occurred: {e}"))


async def _dispatch(request: web.Request, cluster: SimCluster, path: str) -> web.StreamResponse:
    segments = [unquote(s) for s in path.strip("/").split("/") if s]
    method = request.method
    if segments and segments[0] in ("readyz", "healthz", "livez"):
        return _health(cluster, segments[0])
    if segments == ["version"]:
        return json_response(_version(cluster))
    catalog = cluster.state.catalog
    if segments[:2] == ["openapi", "v3"]:
        return _openapi(cluster, "/".join(segments[2:]))
    if segments == ["openapi", "v2"]:
        body, content_type = openapi.v2_document(request.headers.get("Accept", ""), cluster.git_version)
        return web.Response(body=body, headers={"Content-Type": content_type})
    if not segments or segments[0] not in ("api", "apis"):
        raise errors.path_not_found()
    if segments in (["api"], ["apis"]) and wants_aggregated_discovery(request.headers.get("Accept", "")):
        body, etag = aggregated_discovery_document(catalog, core=segments == ["api"])
        headers = {"Content-Type": AGGREGATED_DISCOVERY, "ETag": etag}
        if request.headers.get("If-None-Match") == etag:
            return web.Response(status=304, headers=headers)
        return web.Response(body=body, headers=headers)
    if segments == ["api"]:
        return json_response(api_versions(request.host))
    if segments == ["apis"]:
        return json_response(api_group_list(catalog))
    if segments[0] == "apis" and len(segments) == 2:
        versions = catalog.group_versions().get(segments[1])
        if not versions or not segments[1]:
            raise errors.path_not_found()
        return json_response(api_group(segments[1], versions))
    group, version, rest = ("", segments[1], segments[2:]) if segments[0] == "api" else (
        segments[1], segments[2], segments[3:])
    if not rest:
        listed = api_resource_list(catalog, group, version)
        if listed is None:
            raise errors.path_not_found()
        return json_response(listed)
    target = _target(cluster, group, version, rest)
    if watch.requested(request) and target.name is None:
        return await watch.serve(request, cluster, target.type, target.namespace, _crd(cluster, target.type))
    if method in ("GET", "HEAD"):
        return _get(request, cluster, target)
    if request.query.get("dryRun"):  # refused rather than ignored: a dry run must not write
        raise errors.bad_request("dryRun is not supported by the simulator")
    body = await _body(request) if method in ("POST", "PUT", "PATCH") else None
    if method == "DELETE":
        return _delete(request, cluster, target, await _body(request))
    warnings = [] if body is None else schemas.check_fields(
        target.type, body, request.query.get("fieldValidation"), target.subresource, _crd(cluster, target.type),
        patch=method == "PATCH")
    response = _write(request, cluster, target, body)
    for warning in warnings:  # unknown fields under fieldValidation=Warn
        response.headers.add("Warning", f"299 - {json.dumps(warning)}")
    return response


def _write(request: web.Request, cluster: SimCluster, target: Target, body: Any) -> web.Response:
    method, state = request.method, cluster.state
    t, namespace, name, sub = target.type, target.namespace or "", target.name, target.subresource
    if method == "POST" and name is None:
        if target.namespace is None and t.namespaced:
            raise errors.method_not_allowed(method, t.qualified)
        return json_response(state.create(t, namespace, body), 201)
    if name is None:
        raise errors.method_not_allowed(method, t.qualified)
    if sub == "scale" and method in ("PUT", "PATCH"):
        return json_response(state.update_scale(t, namespace, name, body, merge=method == "PATCH"))
    if method == "PUT":
        return json_response(state.replace(t, namespace, name, body, status_only=sub == "status"))
    if method == "PATCH":
        obj, created = state.patch(t, namespace, name, body, _media_type(request), request.query.get("fieldManager"),
                                   status_only=sub == "status")
        return json_response(obj, 201 if created else 200)
    raise errors.method_not_allowed(method, f"{t.qualified}/{sub}" if sub else t.qualified)


def _delete(request: web.Request, cluster: SimCluster, target: Target, options: Any) -> web.Response:
    """DELETE of one object or a collection; `options` is the body, a DeleteOptions (or nothing)."""
    if not isinstance(options, dict):
        raise errors.bad_request("the body of the request must be a DeleteOptions object")
    t, state = target.type, cluster.state
    if target.name is None:
        return json_response(state.delete_collection(t, target.namespace, request.query.get("labelSelector")))
    if target.subresource is not None:
        raise errors.method_not_allowed("DELETE", f"{t.qualified}/{target.subresource}")
    return json_response(state.delete(t, target.namespace or "", target.name, options))


def _get(request: web.Request, cluster: SimCluster, target: Target) -> web.Response:
    state, t = cluster.state, target.type
    if request.query.get("watch") in ("1", "true"):
        raise errors.method_not_allowed("WATCH", t.qualified)
    if target.name is None:
        selectors = (request.query.get("labelSelector"), request.query.get("fieldSelector"))
        if tables.table_version(request.headers.get("Accept", "")) is None:
            return web.Response(body=state.list_encoded(t, target.namespace, *selectors),
                                content_type="application/json")
        # Encoded at once by _printed, so the uncopied view is safe.
        return _printed(request, cluster, t, state.list_view(t, target.namespace, *selectors))
    if target.subresource == "scale":
        return json_response(state.get_scale(t, target.namespace or "", target.name))
    return _printed(request, cluster, t, state.get(t, target.namespace or "", target.name))


def _printed(request: web.Request, cluster: SimCluster, t: ResourceType, body: dict[str, Any]) -> web.Response:
    """The answer to a GET, as a Table when the client asks for one (`kubectl get`)."""
    return json_response(tables.printed(request.headers.get("Accept", ""), request.query.get("includeObject"), t,
                                        body, cluster.state.clock.now(), _crd(cluster, t)))


def _crd(cluster: SimCluster, t: ResourceType) -> dict[str, Any] | None:
    """The CRD serving a custom type (its schema and printer columns); None for built-ins."""
    return cluster.state.store.get(CRD, "", f"{t.plural}.{t.group}") if t.custom else None


def _openapi(cluster: SimCluster, path: str) -> web.Response:
    catalog, version = cluster.state.catalog, cluster.git_version
    if not path:
        return json_response(openapi.index(catalog, lambda t: _crd(cluster, t), version))
    document = openapi.document(catalog, path, lambda t: _crd(cluster, t), version)
    if document is None:
        raise errors.path_not_found()
    return web.Response(body=document, content_type="application/json")


def _target(cluster: SimCluster, group: str, version: str, rest: list[str]) -> Target:
    lookup = cluster.state.catalog.lookup
    if len(rest) >= 3 and rest[0] == "namespaces":
        t = lookup(group, version, rest[2])
        if t is not None and t.namespaced:
            return _with_name(t, rest[1], rest[3:])
    t = lookup(group, version, rest[0])
    if t is None:
        raise errors.path_not_found()
    if t.namespaced:
        if len(rest) > 1:
            raise errors.path_not_found()
        return Target(t, None, None, None)
    return _with_name(t, None, rest[1:])


def _with_name(t: ResourceType, namespace: str | None, rest: list[str]) -> Target:
    if len(rest) > 2 or (len(rest) == 2 and rest[1] not in t.subresources):
        raise errors.path_not_found()
    return Target(t, namespace, rest[0] if rest else None, rest[1] if len(rest) == 2 else None)


def _media_type(request: web.Request) -> str:
    return request.headers.get("Content-Type", "application/json").split(";")[0].strip().lower()


async def _body(request: web.Request) -> Any:
    raw = await request.read()
    if not raw:
        return {}
    try:
        if _media_type(request) == APPLY_PATCH:
            return _json_or_yaml(raw)
        return json.loads(raw)
    except (ValueError, yaml.YAMLError) as e:
        kind = "YAML" if _media_type(request) == APPLY_PATCH else "JSON"
        raise errors.bad_request(f"the body of the request could not be decoded as {kind}: {e}") from e


def _json_or_yaml(raw: bytes) -> Any:
    # Most applies are JSON (a YAML subset) and the JSON parser is many times faster.
    if raw.lstrip().startswith(b"{"):
        with contextlib.suppress(ValueError):
            return json.loads(raw)
    return yaml.load(raw, Loader=_YAML_LOADER)


def _health(cluster: SimCluster, endpoint: str) -> web.Response:
    if endpoint == "readyz" and not cluster.serve_readyz:
        return web.Response(status=404, text="404 page not found\n")
    if cluster.fault is Fault.UNHEALTHY:
        return web.Response(status=500, text=f"[+]ping ok\n[-]etcd failed: reason withheld\n{endpoint} check failed\n")
    return web.Response(status=cluster.health_status, text="ok")


def _version(cluster: SimCluster) -> dict[str, str]:
    major, minor = cluster.git_version.lstrip("v").split(".")[:2]
    return {"major": major, "minor": minor, "gitVersion": cluster.git_version,
            "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
            "buildDate": "2024-08-13T07:28:49Z", "goVersion": "go1.22.5", "compiler": "gc",
            "platform": "linux/amd64"}

