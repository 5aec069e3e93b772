"""Server-side printing: a list or object as a meta.k8s.io Table, which `kubectl get` asks for with
`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`.

Columns follow kube-apiserver's printers (pkg/printers/internalversion/printers.go): priority 0
columns are what `kubectl get` shows, priority 1 columns are added by `-o wide`. Custom
resources get their CRD's additionalPrinterColumns (Age when it has none); built-in types
without printers get the default Name / Created At table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from jsonpath_ng.exceptions import JsonPathParserError
from jsonpath_ng.ext import parse as parse_jsonpath

from flotilla.cli.age import human_duration, since_text
from sim.accept import negotiated
from sim.catalog import ResourceType

Obj = dict[str, Any]
Cell = Callable[[Obj, datetime], Any]
TABLE_VERSIONS = ("v1", "v1beta1")
NONE = "<none>"


@dataclass(frozen=True)
class Column:
    name: str
    cell: Cell
    type: str = "string"
    priority: int = 0
    format: str = ""
    description: str = ""

    def definition(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "format": self.format, "description": self.description,
                "priority": self.priority}


def table_version(accept: str) -> str | None:
    """The Table version the Accept header asks for first ("v1" or "v1beta1"), or None for a plain
    object."""
    return negotiated(accept, "Table", "meta.k8s.io", TABLE_VERSIONS)


def printed(accept: str, include_object: str | None, t: ResourceType, body: Obj, now: datetime,
            crd: Obj | None = None) -> Obj:
    """`body` (a list or one object of type `t`) as the Table the Accept header asks for, or
    unchanged when it asks for none."""
    version = table_version(accept)
    if version is None:
        return body
    items = body["items"] if "items" in body else [body]
    resource_version = str(_get(body, "metadata", "resourceVersion") or "")
    return to_table(t, items, version, now, resource_version, include_object, crd)


def to_table(t: ResourceType, items: list[Obj], version: str, now: datetime, resource_version: str,
             include_object: str | None, crd: Obj | None = None) -> Obj:
    """`items` (full objects) as a Table of `version`. `include_object` is the request's
    includeObject (None/"Metadata": PartialObjectMetadata, "Object": the object, "None": nothing)."""
    columns = columns_for(t, crd)
    rows = []
    for obj in items:
        row: Obj = {"cells": [_cell(column, obj, now) for column in columns]}
        if include_object == "Object":
            row["object"] = {"apiVersion": t.api_version, "kind": t.kind, **obj}
        elif include_object != "None":
            row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": f"meta.k8s.io/{version}",
                             "metadata": obj.get("metadata") or {}}
        rows.append(row)
    return {"kind": "Table", "apiVersion": f"meta.k8s.io/{version}", "metadata": {"resourceVersion": resource_version},
            "columnDefinitions": [c.definition() for c in columns], "rows": rows}


def columns_for(t: ResourceType, crd: Obj | None = None) -> list[Column]:
    if t.custom:
        return _custom_columns(t, crd)
    return _BUILTIN.get((t.group, t.kind), _DEFAULT)


def _cell(column: Column, obj: Obj, now: datetime) -> Any:
    try:
        return column.cell(obj, now)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        return ""  # a malformed object prints an empty cell rather than failing the whole list


# -- helpers the printers share -----------------------------------------------------------------------

def _get(obj: Any, *path: str | int) -> Any:
    for key in path:
        if isinstance(obj, dict):
            obj = obj.get(key)
        elif isinstance(obj, list) and isinstance(key, int) and -len(obj) <= key < len(obj):
            obj = obj[key]
        else:
            return None
    return obj


def _time(text: Any) -> datetime | None:
    if not text:
        return None
    return datetime.fromisoformat(str(text).replace("Z", "+00:00"))


def _age(obj: Obj, now: datetime) -> str:
    return since_text(_get(obj, "metadata", "creationTimestamp"), now)


def _int(value: Any) -> int:
    return int(value or 0)


def _join(values: list[Any]) -> str:
    return ",".join(str(v) for v in values if v not in (None, "")) or NONE


def _selector(selector: Any) -> str:
    """metav1.FormatLabelSelector."""
    if not isinstance(selector, dict):
        return NONE
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression.get("key"), expression.get("operator"), expression.get("values") or []
        listed = ",".join(sorted(values))
        parts.append({"In": f"{key} in ({listed})", "NotIn": f"{key} notin ({listed})", "Exists": f"{key}",
                      "DoesNotExist": f"!{key}"}.get(operator, f"{key} {operator} ({listed})"))
    return ",".join(parts) or NONE


def _map(values: Any) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted((values or {}).items())) or NONE


def _containers(obj: Obj) -> list[Obj]:
    return _get(obj, "spec", "template", "spec", "containers") or []


_NAME = Column("Name", lambda o, _: _get(o, "metadata", "name"), format="name",
               description="Name must be unique within a namespace.")
_AGE = Column("Age", _age, description="CreationTimestamp is a timestamp representing the server time when this "
                                       "object was created.")
_CONTAINERS = Column("Containers", lambda o, _: _join([c.get("name") for c in _containers(o)]), priority=1,
                     description="Names of each container in the template.")
_IMAGES = Column("Images", lambda o, _: _join([c.get("image") for c in _containers(o)]), priority=1,
                 description="Images referenced by each container in the template.")
_SELECTOR = Column("Selector", lambda o, _: _selector(_get(o, "spec", "selector")), priority=1,
                   description="A label query over pods that should match the replica count.")
_DEFAULT = [_NAME, Column("Created At", lambda o, _: _get(o, "metadata", "creationTimestamp"), type="date",
                          description="CreationTimestamp is a timestamp representing the server time when this "
                                      "object was created.")]


def _int_column(name: str, *path: str, description: str = "") -> Column:
    return Column(name, lambda o, _: _int(_get(o, *path)), type="integer", description=description)


# -- per-type printers ---------------------------------------------------------------------------------

def _pod_ready(pod: Obj, _: datetime) -> str:
    statuses = _get(pod, "status", "containerStatuses") or []
    return f"{sum(1 for s in statuses if s.get('ready'))}/{len(_get(pod, 'spec', 'containers') or [])}"


def _pod_status(pod: Obj, _: datetime) -> str:
    status = pod.get("status") or {}
    reason = status.get("reason") or status.get("phase") or "Unknown"
    for container in status.get("containerStatuses") or []:
        state = container.get("state") or {}
        if (state.get("waiting") or {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif "terminated" in state:
            terminated = state["terminated"] or {}
            reason = terminated.get("reason") or (f"Signal:{terminated['signal']}" if terminated.get("signal")
                                                   else f"ExitCode:{terminated.get('exitCode', 0)}")
    if _get(pod, "metadata", "deletionTimestamp"):
        reason = "Terminating"
    return str(reason)


def _node_status(node: Obj, _: datetime) -> str:
    ready = next((c for c in _get(node, "status", "conditions") or [] if c.get("type") == "Ready"), None)
    status = "Unknown" if ready is None else {"True": "Ready"}.get(ready.get("status"), "NotReady")
    return f"{status},SchedulingDisabled" if _get(node, "spec", "unschedulable") else status


def _node_roles(node: Obj, _: datetime) -> str:
    labels = _get(node, "metadata", "labels") or {}
    roles = sorted({k.removeprefix("node-role.kubernetes.io/") for k in labels
                    if k.startswith("node-role.kubernetes.io/")} | ({labels["kubernetes.io/role"]}
                                                                    if labels.get("kubernetes.io/role") else set()))
    return _join(roles)


def _node_address(kind: str) -> Cell:
    return lambda node, _: _join([a.get("address") for a in _get(node, "status", "addresses") or []
                                  if a.get("type") == kind])


def _service_external(service: Obj, _: datetime) -> str:
    spec, ingress = service.get("spec") or {}, _get(service, "status", "loadBalancer", "ingress") or []
    addresses = [i.get("ip") or i.get("hostname") for i in ingress] + list(spec.get("externalIPs") or [])
    if spec.get("type") == "LoadBalancer" and not addresses:
        return "<pending>"
    return _join(addresses)


def _service_ports(service: Obj, _: datetime) -> str:
    ports = []
    for port in _get(service, "spec", "ports") or []:
        node_port = f":{port['nodePort']}" if port.get("nodePort") else ""
        ports.append(f"{port.get('port')}{node_port}/{port.get('protocol') or 'TCP'}")
    return _join(ports)


def _job_status(job: Obj, _: datetime) -> str:
    conditions = {c.get("type"): c.get("status") for c in _get(job, "status", "conditions") or []}
    for condition, shown in (("Failed", "Failed"), ("Complete", "Complete"), ("Suspended", "Suspended"),
                             ("FailureTarget", "FailureTarget"), ("SuccessCriteriaMet", "SuccessCriteriaMet")):
        if conditions.get(condition) == "True":
            return shown
    return "Terminating" if _get(job, "metadata", "deletionTimestamp") else "Running"


def _job_completions(job: Obj, _: datetime) -> str:
    succeeded, spec = _int(_get(job, "status", "succeeded")), job.get("spec") or {}
    if spec.get("completions") is not None:
        return f"{succeeded}/{spec['completions']}"
    parallelism = _int(spec.get("parallelism", 1))
    return f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"


def _job_duration(job: Obj, now: datetime) -> str:
    started = _time(_get(job, "status", "startTime"))
    if started is None:
        return ""
    finished = _time(_get(job, "status", "completionTime")) or now
    return human_duration((finished - started).total_seconds())


def _event_object(event: Obj, _: datetime) -> str:
    involved = event.get("involvedObject") or {}
    return f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}"


def _event_last_seen(event: Obj, now: datetime) -> str:
    last = event.get("lastTimestamp") or event.get("eventTime") or _get(event, "metadata", "creationTimestamp")
    return since_text(last, now)


def _access_modes(pvc: Obj, _: datetime) -> str:
    short = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX", "ReadWriteOncePod": "RWOP"}
    modes = _get(pvc, "status", "accessModes") or _get(pvc, "spec", "accessModes") or []
    return ",".join(short.get(m, m) for m in modes)


def _pdb_value(field: str) -> Cell:
    return lambda pdb, _: "N/A" if _get(pdb, "spec", field) is None else str(_get(pdb, "spec", field))


def _ingress_ports(ingress: Obj, _: datetime) -> str:
    return "80, 443" if _get(ingress, "spec", "tls") else "80"


_BUILTIN: dict[tuple[str, str], list[Column]] = {
    ("", "Pod"): [
        _NAME, Column("Ready", _pod_ready, description="The aggregate readiness state of this pod for accepting "
                                                       "traffic."),
        Column("Status", _pod_status, description="The aggregate status of the containers in this pod."),
        Column("Restarts", lambda o, _: sum(_int(s.get("restartCount")) for s in
                                            _get(o, "status", "containerStatuses") or []), type="integer",
               description="The number of times the containers in this pod have been restarted."),
        _AGE,
        Column("IP", lambda o, _: _get(o, "status", "podIP") or NONE, priority=1, description="IP address allocated "
               "to the pod."),
        Column("Node", lambda o, _: _get(o, "spec", "nodeName") or NONE, priority=1,
               description="NodeName is a request to schedule this pod onto a specific node."),
        Column("Nominated Node", lambda o, _: _get(o, "status", "nominatedNodeName") or NONE, priority=1,
               description="nominatedNodeName is set when this pod preempts other pods on the node."),
        Column("Readiness Gates", lambda o, _: NONE if not _get(o, "spec", "readinessGates") else
               f"0/{len(_get(o, 'spec', 'readinessGates'))}", priority=1,
               description="If specified, all readiness gates will be evaluated for pod readiness."),
    ],
    ("apps", "Deployment"): [
        _NAME, Column("Ready", lambda o, _: f"{_int(_get(o, 'status', 'readyReplicas'))}/"
                                            f"{_int(_get(o, 'spec', 'replicas'))}",
                      description="Number of the pod with ready state"),
        _int_column("Up-to-date", "status", "updatedReplicas",
                    description="Total number of non-terminated pods targeted by this deployment that have the "
                                "desired template spec."),
        _int_column("Available", "status", "availableReplicas",
                    description="Total number of available pods (ready for at least minReadySeconds) targeted by "
                                "this deployment."),
        _AGE, _CONTAINERS, _IMAGES, _SELECTOR,
    ],
    ("apps", "ReplicaSet"): [
        _NAME, _int_column("Desired", "spec", "replicas", description="Replicas is the number of desired replicas."),
        _int_column("Current", "status", "replicas", description="Replicas is the most recently observed number of "
                                                                 "replicas."),
        _int_column("Ready", "status", "readyReplicas", description="The number of ready replicas for this replica "
                                                                    "set."),
        _AGE, _CONTAINERS, _IMAGES, _SELECTOR,
    ],
    ("apps", "StatefulSet"): [
        _NAME, Column("Ready", lambda o, _: f"{_int(_get(o, 'status', 'readyReplicas'))}/"
                                            f"{_int(_get(o, 'spec', 'replicas'))}",
                      description="Number of the pod with ready state"),
        _AGE, _CONTAINERS, _IMAGES,
    ],
    ("apps", "DaemonSet"): [
        _NAME,
        _int_column("Desired", "status", "desiredNumberScheduled",
                    description="The total number of nodes that should be running the daemon pod."),
        _int_column("Current", "status", "currentNumberScheduled",
                    description="The number of nodes that are running at least 1 daemon pod."),
        _int_column("Ready", "status", "numberReady",
                    description="The number of nodes that should be running the daemon pod and have it ready."),
        _int_column("Up-to-date", "status", "updatedNumberScheduled",
                    description="The total number of nodes that are running updated daemon pod."),
        _int_column("Available", "status", "numberAvailable",
                    description="The number of nodes that should be running the daemon pod and have it available."),
        Column("Node Selector", lambda o, _: _map(_get(o, "spec", "template", "spec", "nodeSelector")),
               description="NodeSelector is a selector which must be true for the pod to fit on a node."),
        _AGE, _CONTAINERS, _IMAGES, _SELECTOR,
    ],
    ("batch", "Job"): [
        _NAME, Column("Status", _job_status, description="Status of the job."),
        Column("Completions", _job_completions, description="The completion status of the job."),
        Column("Duration", _job_duration, description="Time required to complete the job."),
        _AGE, _CONTAINERS, _IMAGES, _SELECTOR,
    ],
    ("", "Service"): [
        _NAME, Column("Type", lambda o, _: _get(o, "spec", "type") or "ClusterIP", description="type determines how "
                      "the Service is exposed."),
        Column("Cluster-IP", lambda o, _: _get(o, "spec", "clusterIP") or NONE, description="clusterIP is the IP "
               "address of the service."),
        Column("External-IP", _service_external, description="externalIPs is a list of IP addresses for which "
               "nodes in the cluster will also accept traffic for this service."),
        Column("Port(s)", _service_ports, description="The list of ports that are exposed by this service."),
        _AGE,
        Column("Selector", lambda o, _: _map(_get(o, "spec", "selector")), priority=1,
               description="Route service traffic to pods with label keys and values matching this selector."),
    ],
    ("", "Node"): [
        _NAME, Column("Status", _node_status, description="The status of the node"),
        Column("Roles", _node_roles, description="The roles of the node"), _AGE,
        Column("Version", lambda o, _: _get(o, "status", "nodeInfo", "kubeletVersion") or "",
               description="Kubelet Version reported by the node."),
        Column("Internal-IP", _node_address("InternalIP"), priority=1, description="List of addresses reachable to "
               "the node."),
        Column("External-IP", _node_address("ExternalIP"), priority=1, description="List of addresses reachable to "
               "the node."),
        Column("OS-Image", lambda o, _: _get(o, "status", "nodeInfo", "osImage") or "<unknown>", priority=1,
               description="OS Image reported by the node."),
        Column("Kernel-Version", lambda o, _: _get(o, "status", "nodeInfo", "kernelVersion") or "<unknown>",
               priority=1, description="Kernel Version reported by the node."),
        Column("Container-Runtime", lambda o, _: _get(o, "status", "nodeInfo", "containerRuntimeVersion") or
               "<unknown>", priority=1, description="ContainerRuntime Version reported by the node."),
    ],
    ("", "Namespace"): [
        _NAME, Column("Status", lambda o, _: _get(o, "status", "phase") or "Active",
                      description="The status of the namespace"), _AGE,
    ],
    ("", "ConfigMap"): [
        _NAME, Column("Data", lambda o, _: len(o.get("data") or {}) + len(o.get("binaryData") or {}), type="integer",
                      description="Number of data entries."), _AGE,
    ],
    ("", "Secret"): [
        _NAME, Column("Type", lambda o, _: o.get("type") or "Opaque", description="The type of the secret"),
        Column("Data", lambda o, _: len(o.get("data") or {}), type="integer", description="Number of data entries."),
        _AGE,
    ],
    ("", "ServiceAccount"): [
        _NAME, Column("Secrets", lambda o, _: len(o.get("secrets") or []), type="integer",
                      description="Secrets is a list of the secrets in the same namespace that pods running using "
                                  "this ServiceAccount are allowed to use."), _AGE,
    ],
    ("", "PersistentVolumeClaim"): [
        _NAME, Column("Status", lambda o, _: _get(o, "status", "phase") or "Pending", description="The status of the "
                      "claim."),
        Column("Volume", lambda o, _: _get(o, "spec", "volumeName") or "", description="VolumeName is the binding "
               "reference to the PersistentVolume backing this claim."),
        Column("Capacity", lambda o, _: _get(o, "status", "capacity", "storage") or "", description="Capacity of the "
               "volume."),
        Column("Access Modes", _access_modes, description="AccessModes contains the desired access modes."),
        Column("StorageClass", lambda o, _: _get(o, "spec", "storageClassName") or "",
               description="StorageClassName is the name of the StorageClass required by the claim."),
        Column("VolumeAttributesClass", lambda o, _: _get(o, "spec", "volumeAttributesClassName") or "<unset>",
               description="The VolumeAttributesClass used by this PVC."),
        _AGE,
        Column("VolumeMode", lambda o, _: _get(o, "spec", "volumeMode") or "Filesystem", priority=1,
               description="volumeMode defines what type of volume is required by the claim."),
    ],
    ("", "Event"): [
        Column("Last Seen", _event_last_seen, description="The time at which the most recent occurrence of this "
               "event was recorded."),
        Column("Type", lambda o, _: o.get("type") or "", description="Type of this event (Normal, Warning)."),
        Column("Reason", lambda o, _: o.get("reason") or "", description="A short, machine understandable string "
               "that gives the reason for the transition into the object's current status."),
        Column("Object", _event_object, description="The object that this event is about."),
        Column("Subobject", lambda o, _: _get(o, "involvedObject", "fieldPath") or "", priority=1,
               description="A subobject of the object that this event is about."),
        Column("Source", lambda o, _: ", ".join(filter(None, [_get(o, "source", "component"),
                                                              _get(o, "source", "host")])), priority=1,
               description="The component reporting this event."),
        Column("Message", lambda o, _: o.get("message") or "", description="A human-readable description of the "
               "status of this operation."),
        Column("First Seen", lambda o, now: since_text(o.get("firstTimestamp"), now), priority=1,
               description="The time at which the event was first recorded."),
        Column("Count", lambda o, _: _int(o.get("count") or 1), type="integer", priority=1,
               description="The number of times this event has occurred."),
        Column("Name", lambda o, _: _get(o, "metadata", "name"), format="name", priority=1,
               description="Name must be unique within a namespace."),
    ],
    ("policy", "PodDisruptionBudget"): [
        _NAME, Column("Min Available", _pdb_value("minAvailable"), description="The minimum number of pods that must "
                      "be available."),
        Column("Max Unavailable", _pdb_value("maxUnavailable"), description="The maximum number of pods that may be "
               "unavailable."),
        _int_column("Allowed Disruptions", "status", "disruptionsAllowed",
                    description="Calculated number of pods that may be disrupted at this time."),
        _AGE,
    ],
    ("networking.k8s.io", "Ingress"): [
        _NAME, Column("Class", lambda o, _: _get(o, "spec", "ingressClassName") or NONE,
                      description="The name of the IngressClass resource."),
        Column("Hosts", lambda o, _: ",".join(r.get("host") or "*" for r in _get(o, "spec", "rules") or []) or "*",
               description="Hosts that incoming requests are matched against before the ingress rule"),
        Column("Address", lambda o, _: ",".join(i.get("ip") or i.get("hostname") or "" for i in
                                                _get(o, "status", "loadBalancer", "ingress") or []),
               description="Address is a list containing ingress points for the load-balancer"),
        Column("Ports", _ingress_ports, description="Ports of TLS configurations that open"),
        _AGE,
    ],
    ("coordination.k8s.io", "Lease"): [
        _NAME, Column("Holder", lambda o, _: _get(o, "spec", "holderIdentity") or "",
                      description="The holder of the lease."), _AGE,
    ],
}


# -- custom resources ---------------------------------------------------------------------------------

def _custom_columns(t: ResourceType, crd: Obj | None) -> list[Column]:
    version = next((v for v in _get(crd, "spec", "versions") or [] if v.get("name") == t.version), {})
    printer = version.get("additionalPrinterColumns") or [
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    return [_NAME, *(_printer_column(c) for c in printer)]


def _printer_column(spec: Obj) -> Column:
    kind = spec.get("type") or "string"
    try:
        path = parse_jsonpath("$" + str(spec.get("jsonPath") or ""))
    except (JsonPathParserError, Exception):  # an unparsable path prints empty cells, as the server does
        path = None

    def cell(obj: Obj, now: datetime) -> Any:
        found = [m.value for m in path.find(obj)] if path is not None else []
        if not found or found[0] is None:
            return None
        value = found[0]
        return since_text(value, now) if kind == "date" else value

    # The server turns "date" columns into ages, so kubectl sees them as strings.
    return Column(str(spec.get("name", "")), cell, type="string" if kind == "date" else kind,
                  priority=int(spec.get("priority") or 0), format=str(spec.get("format") or ""),
                  description=str(spec.get("description") or ""))
