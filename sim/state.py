"""The control plane of one simulated cluster: API writes, then what the cluster's controllers,
scheduler and kubelets do in response.

Everything here is synchronous and runs on the event loop: a write settles (controllers
reconcile, pending pods are placed) before its HTTP answer is sent. Timed steps (a pod turning
Ready after the pod-ready delay, a Job's pod completing) go through the shared `Timers`.
"""

from __future__ import annotations

import builtins
import copy
import json
import uuid
from collections.abc import Iterator
from typing import Any

from flotilla.aio.clock import Clock
from sim import errors, other_status, pods
from sim.catalog import CRD, NAMESPACE, NODE, POD, Catalog, ResourceType, builtin, types_of_crd
from sim.kubelets import AppFault, Kubelets
from sim.nodes import node_object
from sim.objects import INITIAL_NAMESPACES, ObjectStore, list_item
from sim.patching import merge_patch
from sim.selectors import labels_of, parse_field_selector, parse_label_selector, selector_string
from sim.timefmt import rfc3339
from sim.timers import Timers
from sim.workloads import CONTROLLERS

Obj = dict[str, Any]
WorkloadKey = tuple[str, str, str, str]  # group, kind, namespace, name

APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCHES = ("application/merge-patch+json", "application/strategic-merge-patch+json")
_PDB = builtin("PodDisruptionBudget")
_STATIC_STATUS = {("", "Service"), ("networking.k8s.io", "Ingress"), ("", "PersistentVolumeClaim")}


# uuid5 namespace of the simulated clusters' kube-system uids.
_CLUSTER_UIDS = uuid.UUID("6f1c2b0e-6a0c-5d2e-9a43-3b1f0c7e5d11")


def cluster_uid(name: str) -> str:
    """The uid of a simulated cluster's kube-system namespace: the same for the cluster of that
    name at every start, as a real cluster's is for its life (Karmada's join takes it as the
    member's id, Cluster spec.id), and different for each cluster of a simulator."""
    return str(uuid.uuid5(_CLUSTER_UIDS, name))


class ClusterState:
    def __init__(self, name: str, clock: Clock, timers: Timers, pod_ready_delay: float, nodes: int, node_cpu: str,
                 node_memory: str, node_pods: int, git_version: str) -> None:
        self.name = name
        self.clock = clock
        self.catalog = Catalog.with_builtins()
        self.store = ObjectStore(clock)
        self.kubelets = Kubelets(self.store, clock, timers, pod_ready_delay, self._pod_changed, self.settle)
        self._dirty: dict[WorkloadKey, None] = {}
        self._dirty_pdbs: set[str] = set()
        self._lb_addresses = 0
        for namespace in INITIAL_NAMESPACES:
            self.store.ensure_namespace(namespace)
        # A stable uid for kube-system: Karmada's join takes it as the member's id (Cluster spec.id).
        self.store.require(NAMESPACE, "", "kube-system")["metadata"]["uid"] = cluster_uid(name)
        for index in range(1, nodes + 1):
            self.store.insert(NODE, node_object(name, index, node_cpu, node_memory, node_pods, git_version,
                                                self.now()))

    @property
    def app_faults(self) -> set[AppFault]:
        return self.kubelets.app_faults

    # -- the API ----------------------------------------------------------------------------------

    def get(self, t: ResourceType, namespace: str, name: str) -> Obj:
        return copy.deepcopy(self.store.require(t, namespace, name))

    def list(self, t: ResourceType, namespace: str | None, label_selector: str | None = None,
             field_selector: str | None = None) -> Obj:
        return copy.deepcopy(self.list_view(t, namespace, label_selector, field_selector))

    def list_view(self, t: ResourceType, namespace: str | None, label_selector: str | None = None,
                  field_selector: str | None = None) -> Obj:
        """The list as `list` answers it, but sharing the live objects' contents: only for a caller
        that encodes it before the event loop runs anything else. Deep-copying every item of every
        list would be most of the simulator's time under a rollout's per-second pod lists."""
        return {"kind": f"{t.kind}List", "apiVersion": t.api_version,
                "metadata": {"resourceVersion": str(self.store.revision)},
                "items": [list_item(t, obj) for obj in self._selected(t, namespace, label_selector, field_selector)]}

    def list_encoded(self, t: ResourceType, namespace: str | None, label_selector: str | None = None,
                     field_selector: str | None = None) -> bytes:
        """`list` as JSON, each item encoded once per resourceVersion."""
        items = b", ".join(self.store.encoded_item(t, obj)
                           for obj in self._selected(t, namespace, label_selector, field_selector))
        head = json.dumps({"kind": f"{t.kind}List", "apiVersion": t.api_version,
                           "metadata": {"resourceVersion": str(self.store.revision)}})
        return head[:-1].encode() + b', "items": [' + items + b"]}"

    def _selected(self, t: ResourceType, namespace: str | None, label_selector: str | None,
                  field_selector: str | None) -> Iterator[Obj]:
        labels, fields = parse_label_selector(label_selector), parse_field_selector(field_selector)
        return (obj for obj in self.store.items(t, namespace) if labels(labels_of(obj)) and fields(obj))

    def create(self, t: ResourceType, namespace: str, body: Obj) -> Obj:
        self._validate(t, body)
        obj = self.store.create(t, namespace, body)
        return self._written(t, obj)

    def replace(self, t: ResourceType, namespace: str, name: str, body: Obj, status_only: bool = False) -> Obj:
        self._validate(t, body)
        obj = self.store.replace(t, namespace, name, body, status_only)
        return self._written(t, obj)

    def patch(self, t: ResourceType, namespace: str, name: str, body: Any, content_type: str,
              field_manager: str | None, status_only: bool = False) -> tuple[Obj, bool]:
        """(object, created); created only for an apply that made a new object."""
        if not isinstance(body, dict):
            raise errors.bad_request("the patch must be a JSON/YAML object")
        if content_type == APPLY_PATCH:
            if not field_manager:
                raise errors.bad_request("PATCH with apply requires fieldManager")
            if status_only:
                return self.patch(t, namespace, name, body, MERGE_PATCHES[0], field_manager, True)
            self._validate(t, body)
            obj, created = self.store.apply(t, namespace, name, body)
            return self._written(t, obj), created
        if content_type in MERGE_PATCHES:
            if not status_only:
                self._validate(t, merge_patch(self.store.require(t, namespace, name), body))
            return self._written(t, self.store.merge(t, namespace, name, body, status_only)), False
        raise errors.ApiError(415, "UnsupportedMediaType", f"the body of the request was in an unknown format - "
                              f"accepted media types include: {APPLY_PATCH}, {', '.join(MERGE_PATCHES)}")

    def delete(self, t: ResourceType, namespace: str, name: str, options: Obj | None = None) -> Obj:
        """`options`: the request's DeleteOptions (only `preconditions` is heeded)."""
        preconditions = (options or {}).get("preconditions")
        obj, gone = self.store.delete(t, namespace, name, preconditions if isinstance(preconditions, dict) else None)
        if not gone:
            return copy.deepcopy(obj)
        self._removed(t, obj)
        self.settle()
        details = {"name": name, "kind": t.plural, "uid": obj["metadata"]["uid"]}
        if t.group:
            details["group"] = t.group
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}

    def delete_collection(self, t: ResourceType, namespace: str | None, label_selector: str | None) -> Obj:
        listed = self.list(t, namespace, label_selector)
        for item in listed["items"]:
            self.delete(t, item["metadata"].get("namespace", ""), item["metadata"]["name"])
        return listed

    def get_scale(self, t: ResourceType, namespace: str, name: str) -> Obj:
        obj = self.store.require(t, namespace, name)
        metadata = obj["metadata"]
        return {
            "kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {k: metadata[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                         if k in metadata},
            "spec": {"replicas": obj["spec"].get("replicas", 1)},
            "status": {"replicas": (obj.get("status") or {}).get("replicas", 0),
                       "selector": selector_string(obj["spec"].get("selector"))},
        }

    def update_scale(self, t: ResourceType, namespace: str, name: str, body: Any, merge: bool) -> Obj:
        scale = merge_patch(self.get_scale(t, namespace, name), body) if merge else body
        replicas = ((scale or {}).get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or replicas < 0:
            raise errors.invalid(t, name, "spec.replicas: Invalid value: must be a non-negative integer")
        self.store.merge(t, namespace, name, {"spec": {"replicas": replicas}})
        self._written(t, self.store.require(t, namespace, name))
        return self.get_scale(t, namespace, name)

    # -- faults ------------------------------------------------------------------------------------

    def set_app_fault(self, namespace: str, name: str, healthy: bool, kind: str | None = None) -> None:
        self.kubelets.set_app_fault(namespace, name, healthy, kind)
        self.settle()

    # -- what a write sets off ---------------------------------------------------------------------

    def _validate(self, t: ResourceType, body: Obj) -> None:
        if t is not CRD:
            return
        spec, name = body.get("spec") or {}, (body.get("metadata") or {}).get("name", "")
        names = spec.get("names") or {}
        if not spec.get("group") or not names.get("plural") or not names.get("kind") or not spec.get("versions"):
            raise errors.invalid(t, name, "spec.group, spec.names.plural, spec.names.kind and spec.versions "
                                 "are required")
        if name != f"{names['plural']}.{spec['group']}":
            raise errors.invalid(t, name, f"metadata.name: Invalid value: must be spec.names.plural+\".\"+spec.group "
                                 f"({names['plural']}.{spec['group']})")

    def _written(self, t: ResourceType, obj: Obj) -> Obj:
        """After an API write: the object as written (what the API answers), then let the
        cluster react."""
        answer = copy.deepcopy(obj)
        if self.store.get(t, obj["metadata"].get("namespace", ""), obj["metadata"]["name"]) is None:
            self._removed(t, obj)  # the write dropped the last finalizer
        else:
            self._reacted(t, obj)
        self.settle()
        return answer

    def _reacted(self, t: ResourceType, obj: Obj) -> None:
        key = (t.group, t.kind)
        metadata = obj["metadata"]
        namespace = metadata.get("namespace", "")
        if key in CONTROLLERS and not t.custom:
            self._dirty[(t.group, t.kind, namespace, metadata["name"])] = None
        elif t is POD:
            if "status" not in obj:  # created through the API, not by a controller
                self.kubelets.admit(obj)
        elif t is NODE:
            for ds in self.store.items(builtin("DaemonSet")):
                self._dirty[("apps", "DaemonSet", ds["metadata"]["namespace"], ds["metadata"]["name"])] = None
        elif t is CRD:
            spec = obj["spec"]
            self.catalog.remove_group_resource(spec["group"], spec["names"]["plural"])
            for served in types_of_crd(obj):
                self.catalog.add(served)
            self.store.set_status(obj, other_status.crd_status(obj, self.now()))
        elif t is NAMESPACE:
            self.store.set_status(obj, other_status.namespace_status(obj))
        elif key in _STATIC_STATUS:
            self.store.set_status(obj, self._static_status(t, obj))
        elif t is _PDB:
            self._dirty_pdbs.add(namespace)

    def _removed(self, t: ResourceType, obj: Obj) -> None:
        metadata = obj["metadata"]
        if (t.group, t.kind) in CONTROLLERS and not t.custom:
            for pod in self.pods_of(obj):
                self.delete_pod(pod)
        elif t is POD:
            self.kubelets.forget(obj)
            self._pod_changed(obj)
        elif t is CRD:
            group, plural = obj["spec"]["group"], obj["spec"]["names"]["plural"]
            self.store.remove_resource(group, plural)
            self.catalog.remove_group_resource(group, plural)
        elif t is NAMESPACE:
            for key, removed in self.store.remove_namespace_contents(metadata["name"]):
                if key == POD.key:
                    self.kubelets.forget(removed)
        elif t is NODE:
            # Pod garbage collection: pods bound to a node that is gone are deleted, and their
            # controllers replace them elsewhere (capacity lost).
            for pod in [p for p in self.store.items(POD) if p["spec"].get("nodeName") == metadata["name"]]:
                self.delete_pod(pod)
                self._pod_changed(pod)
            self._reacted(t, obj)

    def _static_status(self, t: ResourceType, obj: Obj) -> dict[str, Any]:
        if t.kind == "PersistentVolumeClaim":
            return other_status.pvc_status(obj)
        if t.kind == "Ingress":
            return other_status.ingress_status(obj, self._next_lb_address())
        return other_status.service_status(obj, self._next_lb_address())

    def settle(self) -> None:
        """Reconcile every workload that needs it and place pending pods, until nothing moves."""
        for _ in range(100):  # a bound, so a controller bug cannot hang the event loop
            while self._dirty:
                group, kind, namespace, name = next(iter(self._dirty))
                del self._dirty[(group, kind, namespace, name)]
                obj = self.store.get(builtin(kind), namespace, name)
                if obj is not None and not obj["metadata"].get("deletionTimestamp"):
                    CONTROLLERS[(group, kind)](self, obj)
            self.kubelets.schedule()
            if not self._dirty:
                break
        for namespace in self._dirty_pdbs:
            pdbs = list(self.store.items(_PDB, namespace))
            namespace_pods = list(self.store.items(POD, namespace)) if pdbs else []
            for pdb in pdbs:
                self.store.set_status(pdb, other_status.pdb_status(pdb, namespace_pods, self.now()))
        self._dirty_pdbs.clear()

    # -- pods --------------------------------------------------------------------------------------

    def _pod_changed(self, pod: Obj) -> None:
        owner = self._owner_key(pod)
        if owner is not None:
            self._dirty[owner] = None
        self._dirty_pdbs.add(pod["metadata"].get("namespace", ""))

    @staticmethod
    def _owner_key(pod: Obj) -> WorkloadKey | None:
        ref = pods.controller_ref(pod)
        if ref is None:
            return None
        group = ref.get("apiVersion", "").rpartition("/")[0]
        if (group, ref.get("kind")) not in CONTROLLERS:
            return None
        return group, ref["kind"], pod["metadata"].get("namespace", ""), ref["name"]

    def _next_lb_address(self) -> str:
        self._lb_addresses += 1
        return f"172.18.255.{self._lb_addresses % 250 + 1}"

    # -- the workloads.Host interface --------------------------------------------------------------

    def now(self) -> str:
        return rfc3339(self.clock.now())

    def pods_of(self, owner: Obj) -> builtins.list[Obj]:
        return self.store.controlled(POD, owner["metadata"].get("namespace", ""), owner["metadata"]["uid"])

    def create_pod(self, pod: Obj) -> Obj:
        self.store.insert(POD, pod)
        self.kubelets.admit(pod)
        return pod

    def delete_pod(self, pod: Obj) -> None:
        self.store.remove(POD, pod["metadata"]["namespace"], pod["metadata"]["name"])
        self.kubelets.forget(pod)
        self._dirty_pdbs.add(pod["metadata"]["namespace"])

    def nodes(self) -> builtins.list[Obj]:
        return list(self.store.items(NODE))

    def set_status(self, obj: Obj, status: dict[str, Any]) -> None:
        self.store.set_status(obj, status)
