"""What `flotillactl get` prints: per-kind table columns, and objects as JSON, YAML or names.

Columns follow Karmada's CRD printer columns for Karmada kinds and kubectl's
built-in printers for Kubernetes kinds. Every function here is pure (objects
and a time in, text out) so that tests need no etcd.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from google.protobuf.message import Message

from flotilla.api import codec, conditions, registry
from flotilla.api.registry import ResourceType
from flotilla.api.v1 import cluster_pb2, config_pb2, coordination_pb2, core_pb2, meta_pb2, policy_pb2, work_pb2
from flotilla.cli.age import since
from flotilla.cli.table import table
from flotilla.store.base import meta_of

# Not base64, so a redacted Secret applied back is refused rather than stored.
REDACTED = "<redacted: {size} bytes>"

M = TypeVar("M", bound=Message)
# A column of a kind's table shows any more general kind's column too (NAME shows any object's name).
Obj = TypeVar("Obj", bound=Message, contravariant=True)
Cell = Callable[[Obj, datetime], str]


@dataclass(frozen=True)
class Column(Generic[Obj]):
    header: str
    cell: Cell[Obj]
    # Shown only with `-o wide`.
    wide: bool = False


# -- cells shared by every kind -------------------------------------------------


def _name(obj: Message, now: datetime) -> str:
    return meta_of(obj).name


def _age(obj: Message, now: datetime) -> str:
    return since(meta_of(obj).creation_timestamp, now)


NAME: Column[Message] = Column("NAME", _name)
AGE: Column[Message] = Column("AGE", _age)


def content(obj: Message) -> dict[str, Any]:
    """A template's JSON body (spec, status, data, …); {} when it holds nothing usable."""
    if not isinstance(obj, meta_pb2.Unstructured) or not obj.content:
        return {}
    try:
        data = json.loads(obj.content)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _dig(data: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


_Binding = work_pb2.ResourceBinding | work_pb2.ClusterResourceBinding
_Policy = policy_pb2.PropagationPolicy | policy_pb2.ClusterPropagationPolicy


def _condition(type_: str) -> Cell[_Binding | work_pb2.Work]:
    # Karmada's columns are JSONPath on status.conditions: blank when the condition is absent.
    return lambda obj, now: conditions.condition_status(obj.status.conditions, type_)


# -- Karmada and Flotilla kinds -------------------------------------------------


def _cluster_ready(obj: cluster_pb2.Cluster, now: datetime) -> str:
    # A cluster the status controller has not probed yet has no Ready condition:
    # its readiness is unknown, which says more than a blank cell. The column shows the status
    # itself (True, False, Unknown), not cluster_ready's yes or no.
    return conditions.condition_status(obj.status.conditions, "Ready") or conditions.UNKNOWN


CLUSTER_COLUMNS: list[Column[cluster_pb2.Cluster]] = [
    NAME,
    Column("VERSION", lambda o, now: o.status.kubernetes_version),
    Column("MODE", lambda o, now: o.spec.sync_mode),
    Column("READY", _cluster_ready),
    AGE,
    Column("APIENDPOINT", lambda o, now: o.spec.api_endpoint, wide=True),
    Column("PROVIDER", lambda o, now: o.spec.provider, wide=True),
    Column("REGION", lambda o, now: o.spec.region, wide=True),
    Column("ZONE", lambda o, now: o.spec.zone or ",".join(o.spec.zones), wide=True),
]

POLICY_COLUMNS: list[Column[_Policy]] = [
    NAME,
    # Karmada's CRD defaults both fields (Abort, 0); show what its API server would.
    Column("CONFLICT-RESOLUTION", lambda o, now: o.spec.conflict_resolution or "Abort"),
    Column("PRIORITY", lambda o, now: str(o.spec.priority)),
    AGE,
]


def _target_clusters(obj: _Binding, now: datetime) -> str:
    return ",".join(f"{c.name}:{c.replicas}" for c in obj.spec.clusters)


def _evicting(obj: _Binding, now: datetime) -> str:
    return ",".join(t.from_cluster for t in obj.spec.graceful_eviction_tasks)


BINDING_COLUMNS: list[Column[_Binding]] = [
    NAME,
    Column("SCHEDULED", _condition("Scheduled")),
    Column("FULLYAPPLIED", _condition("FullyApplied")),
    AGE,
    # Where the replicas are and which clusters are being drained: the failover at a glance.
    Column("CLUSTERS", _target_clusters, wide=True),
    Column("EVICTING", _evicting, wide=True),
]


def _workload_kind(obj: work_pb2.Work, now: datetime) -> str:
    for raw in obj.spec.workload.manifests:
        try:
            manifest = json.loads(raw)
        except ValueError:
            continue
        if isinstance(manifest, dict):
            return str(manifest.get("kind", ""))
    return ""


WORK_COLUMNS: list[Column[work_pb2.Work]] = [
    NAME,
    Column("WORKLOAD-KIND", _workload_kind),
    Column("APPLIED", _condition("Applied")),
    AGE,
]

INTERPRETER_COLUMNS: list[Column[config_pb2.ResourceInterpreterCustomization]] = [
    NAME,
    Column("TARGET-API-VERSION", lambda o, now: o.spec.target.api_version),
    Column("TARGET-KIND", lambda o, now: o.spec.target.kind),
    AGE,
]

LEASE_COLUMNS: list[Column[coordination_pb2.Lease]] = [
    NAME,
    Column("HOLDER", lambda o, now: o.spec.holder_identity),
    AGE,
]


def event_interval(event: core_pb2.Event, now: datetime) -> str:
    """`5m`, or `5m (x3 over 20m)` for an event seen more than once, as kubectl shows it."""
    first = since(event.first_timestamp, now)
    last = since(event.last_timestamp, now) if event.last_timestamp.seconds else first
    return f"{last} (x{event.count} over {first})" if event.count > 1 else last


def _event_object(event: core_pb2.Event, now: datetime) -> str:
    ref = event.involved_object
    return f"{ref.kind.lower()}/{ref.name}" if ref.name else ref.kind.lower()


def event_source(event: core_pb2.Event) -> str:
    component = event.source.component or event.reporting_component
    host = event.source.host or event.reporting_instance
    return f"{component}, {host}" if host else component


EVENT_COLUMNS: list[Column[core_pb2.Event]] = [
    Column("LAST SEEN", event_interval),
    Column("TYPE", lambda e, now: e.type),
    Column("REASON", lambda e, now: e.reason),
    Column("OBJECT", _event_object),
    Column("SUBOBJECT", lambda e, now: e.involved_object.field_path, wide=True),
    Column("SOURCE", lambda e, now: event_source(e), wide=True),
    Column("MESSAGE", lambda e, now: e.message.strip()),
    Column("FIRST SEEN", lambda e, now: since(e.first_timestamp, now), wide=True),
    Column("COUNT", lambda e, now: str(e.count), wide=True),
    Column("NAME", _name, wide=True),
]

_BUILTIN_COLUMNS: dict[str, list[Column[Any]]] = {
    registry.CLUSTER.kind: CLUSTER_COLUMNS,
    registry.PROPAGATION_POLICY.kind: POLICY_COLUMNS,
    registry.CLUSTER_PROPAGATION_POLICY.kind: POLICY_COLUMNS,
    registry.RESOURCE_BINDING.kind: BINDING_COLUMNS,
    registry.CLUSTER_RESOURCE_BINDING.kind: BINDING_COLUMNS,
    registry.WORK.kind: WORK_COLUMNS,
    registry.RESOURCE_INTERPRETER_CUSTOMIZATION.kind: INTERPRETER_COLUMNS,
    registry.LEASE.kind: LEASE_COLUMNS,
    registry.EVENT.kind: EVENT_COLUMNS,
}


# -- resource templates (Kubernetes kinds, from their JSON) ---------------------


def _of_content(fn: Callable[[dict[str, Any]], str]) -> Cell[Message]:
    return lambda obj, now: fn(content(obj))


def _ready_of_desired(body: dict[str, Any]) -> str:
    # The API server defaults spec.replicas to 1; a template applied without it means 1.
    desired = _int(_dig(body, "spec", "replicas"), 1)
    return f"{_int(_dig(body, 'status', 'readyReplicas'))}/{desired}"


def _containers(body: dict[str, Any]) -> list[dict[str, Any]]:
    found = _dig(body, "spec", "template", "spec", "containers")
    return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []


def format_label_selector(selector: Any) -> str:
    """A LabelSelector as kubectl prints it: `app=nginx,tier in (web,api)`; `<none>` when empty."""
    if not isinstance(selector, dict):
        return "<none>"
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key", ""), expr.get("operator", ""), expr.get("values") or []
        if op == "Exists":
            parts.append(key)
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
        else:
            parts.append(f"{key} {op.lower()} ({','.join(sorted(values))})")
    return ",".join(parts) or "<none>"


def _service_ports(body: dict[str, Any]) -> str:
    ports = []
    for port in _dig(body, "spec", "ports") or []:
        protocol = port.get("protocol") or "TCP"
        node_port = port.get("nodePort")
        ports.append(f"{port.get('port')}:{node_port}/{protocol}" if node_port else f"{port.get('port')}/{protocol}")
    return ",".join(ports) or "<none>"


def _service_external_ip(body: dict[str, Any]) -> str:
    spec = body.get("spec") or {}
    kind = spec.get("type") or "ClusterIP"
    external = list(spec.get("externalIPs") or [])
    if kind == "ExternalName":
        return str(spec.get("externalName", ""))
    if kind == "LoadBalancer":
        ingress = _dig(body, "status", "loadBalancer", "ingress") or []
        found = [i.get("ip") or i.get("hostname") for i in ingress if isinstance(i, dict)]
        return ",".join([f for f in found if f] + external) or "<pending>"
    return ",".join(external) or "<none>"


DEPLOYMENT_COLUMNS: list[Column[meta_pb2.Unstructured]] = [
    NAME,
    Column("READY", _of_content(_ready_of_desired)),
    Column("UP-TO-DATE", _of_content(lambda b: str(_int(_dig(b, "status", "updatedReplicas"))))),
    Column("AVAILABLE", _of_content(lambda b: str(_int(_dig(b, "status", "availableReplicas"))))),
    AGE,
    Column("CONTAINERS", _of_content(lambda b: ",".join(str(c.get("name", "")) for c in _containers(b))), wide=True),
    Column("IMAGES", _of_content(lambda b: ",".join(str(c.get("image", "")) for c in _containers(b))), wide=True),
    Column("SELECTOR", _of_content(lambda b: format_label_selector(_dig(b, "spec", "selector"))), wide=True),
]

STATEFULSET_COLUMNS: list[Column[meta_pb2.Unstructured]] = [
    NAME,
    Column("READY", _of_content(_ready_of_desired)),
    AGE,
    Column("CONTAINERS", _of_content(lambda b: ",".join(str(c.get("name", "")) for c in _containers(b))), wide=True),
    Column("IMAGES", _of_content(lambda b: ",".join(str(c.get("image", "")) for c in _containers(b))), wide=True),
]

CONFIGMAP_COLUMNS: list[Column[meta_pb2.Unstructured]] = [
    NAME,
    Column("DATA", _of_content(lambda b: str(len(b.get("data") or {}) + len(b.get("binaryData") or {})))),
    AGE,
]

# stringData is write-only in Kubernetes (merged into data); a stored template may still carry it.
SECRET_COLUMNS: list[Column[meta_pb2.Unstructured]] = [
    NAME,
    Column("TYPE", _of_content(lambda b: str(b.get("type") or "Opaque"))),
    Column("DATA", _of_content(lambda b: str(len({**(b.get("data") or {}), **(b.get("stringData") or {})})))),
    AGE,
]

SERVICE_COLUMNS: list[Column[meta_pb2.Unstructured]] = [
    NAME,
    Column("TYPE", _of_content(lambda b: str(_dig(b, "spec", "type") or "ClusterIP"))),
    Column("CLUSTER-IP", _of_content(lambda b: str(_dig(b, "spec", "clusterIP") or "<none>"))),
    Column("EXTERNAL-IP", _of_content(_service_external_ip)),
    Column("PORT(S)", _of_content(_service_ports)),
    AGE,
    Column("SELECTOR", _of_content(lambda b: format_label_selector({"matchLabels": _dig(b, "spec", "selector")})),
           wide=True),
]

_TEMPLATE_COLUMNS: dict[tuple[str, str], list[Column[Any]]] = {
    ("apps", "Deployment"): DEPLOYMENT_COLUMNS,
    ("apps", "StatefulSet"): STATEFULSET_COLUMNS,
    ("", "ConfigMap"): CONFIGMAP_COLUMNS,
    ("", "Secret"): SECRET_COLUMNS,
    ("", "Service"): SERVICE_COLUMNS,
}


def columns_for(rt: ResourceType[M]) -> list[Column[M]]:
    """Every column of a kind, wide ones included; anything not listed gets NAME and AGE."""
    if rt.is_template:
        return _TEMPLATE_COLUMNS.get((rt.group, rt.kind), [NAME, AGE])
    return _BUILTIN_COLUMNS.get(rt.kind, [NAME, AGE])


# -- output formats ---------------------------------------------------------------

_LINE_BREAKS = re.compile(r"[\r\n\t]+")


def render_table(
    rt: ResourceType[M],
    objs: Sequence[M],
    now: datetime,
    *,
    wide: bool = False,
    namespace_column: bool = False,
) -> str:
    """The kubectl table; `namespace_column` (for -A) adds NAMESPACE first on namespaced kinds."""
    columns = [c for c in columns_for(rt) if wide or not c.wide]
    headers = [c.header for c in columns]
    # A newline or tab in a message would tear the row out of the table.
    rows = [[_LINE_BREAKS.sub(" ", c.cell(obj, now)) for c in columns] for obj in objs]
    if namespace_column and rt.namespaced:
        headers = ["NAMESPACE", *headers]
        rows = [[meta_of(obj).namespace, *row] for obj, row in zip(objs, rows, strict=True)]
    return table(headers, rows)


def display_order(rt: ResourceType[M], objs: Sequence[M]) -> list[M]:
    """etcd's key order (namespace, name), except events: their names end in a hash, so time it is."""
    if rt == registry.EVENT:
        return sorted(objs, key=_event_order)
    return list(objs)


def _event_order(obj: Message) -> tuple[int, str]:
    assert isinstance(obj, core_pb2.Event)
    return (obj.last_timestamp.seconds or obj.first_timestamp.seconds, obj.metadata.name)


@runtime_checkable
class _TypeFields(Protocol):
    """Every kind's message has these; Message itself does not declare them."""

    api_version: str
    kind: str


def with_type_fields(rt: ResourceType[M], obj: M) -> M:
    """The object (a copy, if need be) with apiVersion and kind set: objects built in code may leave them empty."""
    assert isinstance(obj, _TypeFields)
    if obj.api_version and obj.kind:
        return obj
    filled = type(obj)()
    filled.CopyFrom(obj)
    filled.api_version = filled.api_version or rt.api_version
    filled.kind = filled.kind or rt.kind
    return filled


def hide_secret_values(body: dict[str, Any], shown: str) -> None:
    """A Secret's values replaced by `shown` (formatted with their `size` in bytes): credentials
    never reach a terminal or a log, as `kubectl describe secret` shows sizes only."""
    data, string_data = body.get("data"), body.get("stringData")
    if isinstance(data, dict):
        for key, value in data.items():
            try:
                size = len(base64.b64decode(str(value), validate=True))
            except (binascii.Error, ValueError):
                size = len(str(value))
            data[key] = shown.format(size=size)
    if isinstance(string_data, dict):
        for key, value in string_data.items():
            string_data[key] = shown.format(size=len(str(value).encode()))


def hide_work_secret_values(body: dict[str, Any], shown: str) -> None:
    """The values of each Secret among a Work's manifests replaced as a Secret's own are
    (`hide_secret_values`). Karmada shows a Work as it is, kubectl a Secret's data as base64; here a
    Work's copy of a Secret is never printed, since the Work is not the Secret's home: the Secret
    (or the member's copy) is where one reads it, with the access that takes."""
    workload = (body.get("spec") or {}).get("workload")
    manifests = workload.get("manifests") if isinstance(workload, dict) else None
    for manifest in manifests if isinstance(manifests, list) else ():
        if isinstance(manifest, dict) and manifest.get("apiVersion") == "v1" and manifest.get("kind") == "Secret":
            hide_secret_values(manifest, shown)


def as_document(rt: ResourceType[M], objs: Sequence[M], single: bool) -> dict[str, Any]:
    """One object in Karmada's JSON shape, or kubectl's `List` of them; a Secret's values redacted,
    and those of a Secret a Work carries."""
    items = [codec.to_dict(with_type_fields(rt, obj)) for obj in objs]
    if rt.group == "" and rt.kind == "Secret":
        for item in items:
            hide_secret_values(item, REDACTED)
    if rt.kind == "Work" and rt.api_version == registry.WORK_API:
        for item in items:
            hide_work_secret_values(item, REDACTED)
    if single:
        return items[0]
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


def render_json(rt: ResourceType[M], objs: Sequence[M], single: bool) -> str:
    # kubectl indents JSON by four spaces.
    return codec.to_json(as_document(rt, objs, single), indent=4)


def render_yaml(rt: ResourceType[M], objs: Sequence[M], single: bool) -> str:
    return codec.to_yaml(as_document(rt, objs, single)).rstrip("\n")


def render_names(rt: ResourceType[M], objs: Sequence[M]) -> str:
    """`-o name`: `deployment.apps/nginx`, `configmap/settings`, as kubectl prints them."""
    prefix = f"{rt.singular}.{rt.group}" if rt.group else rt.singular
    return "\n".join(f"{prefix}/{meta_of(obj).name}" for obj in objs)


def no_resources(namespace: str | None) -> str:
    """What kubectl says for an empty list: naming the namespace when one was asked for."""
    return f"No resources found in {namespace} namespace." if namespace else "No resources found"
