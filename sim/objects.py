"""One cluster's objects, with the API server's rules for writing them.

Kept where it is cheap: uid, creationTimestamp, a per-cluster resourceVersion counter (which
replace checks when the client sends one), generation (set on types with a status subresource
and custom resources, bumped when anything outside metadata and status changes), status kept
out of main-resource writes, finalizers delaying deletion, 404/409/422 Status errors, and the
few defaults controllers rely on (replicas). Namespaces are created on demand when an object is
written into one that does not exist (a real server answers 404).

Objects are held as plain dicts; callers outside the simulator get deep copies.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Iterator
from typing import Any

from flotilla.aio.clock import Clock
from sim import errors, pods
from sim.catalog import NAMESPACE, ResourceType
from sim.history import History
from sim.patching import apply_onto, merge_patch, spec_part
from sim.timefmt import rfc3339

Obj = dict[str, Any]
Ident = tuple[str, str, str, str]  # apiVersion, kind, namespace, name
INITIAL_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")


class ObjectStore:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.revision = 0
        self.history = History()
        self._objects: dict[tuple[str, str], dict[tuple[str, str], Obj]] = {}
        self._order: dict[tuple[str, str], list[tuple[str, str]]] = {}  # each type's keys, sorted
        # (apiVersion, kind, controller uid) -> keys of the objects it controls, and back, so a
        # workload's reconcile finds its pods without scanning every pod of the namespace.
        self._controlled: dict[tuple[str, str, str], dict[tuple[str, str], None]] = {}
        self._controller_of: dict[Ident, tuple[str, str, str]] = {}
        # Each object's list-item encoding at its resourceVersion: the same unchanged pods and
        # nodes are listed every second by a control plane's status collection.
        self._encoded: dict[Ident, tuple[str, bytes]] = {}

    # -- reading -------------------------------------------------------------------------------

    def get(self, t: ResourceType, namespace: str, name: str) -> Obj | None:
        return self._objects.get(t.key, {}).get((namespace if t.namespaced else "", name))

    def require(self, t: ResourceType, namespace: str, name: str) -> Obj:
        obj = self.get(t, namespace, name)
        if obj is None:
            raise errors.not_found(t, name)
        return obj

    def items(self, t: ResourceType, namespace: str | None = None) -> Iterator[Obj]:
        """Live objects (not copies) in key order, optionally of one namespace."""
        bucket = self._objects.get(t.key, {})
        keys = self._order.get(t.key)
        if keys is None:  # sorted again only after an object of the type came or went
            keys = self._order[t.key] = sorted(bucket)
        for key in keys:
            if namespace is None or key[0] == namespace:
                yield bucket[key]

    def controlled(self, t: ResourceType, namespace: str, uid: str) -> list[Obj]:
        """Live objects of type `t` in `namespace` whose controller has `uid`, in key order."""
        bucket, objects = self._controlled.get((t.api_version, t.kind, uid), {}), self._objects.get(t.key, {})
        return [objects[key] for key in sorted(bucket) if key[0] == namespace and key in objects]

    def encoded_item(self, t: ResourceType, obj: Obj) -> bytes:
        """`obj` as an item of a list of `t` encodes it (see `list_item`)."""
        ident, version = _ident(obj), obj["metadata"].get("resourceVersion", "")
        cached = self._encoded.get(ident)
        if cached is not None and cached[0] == version:
            return cached[1]
        data = json.dumps(list_item(t, obj)).encode()
        self._encoded[ident] = (version, data)
        return data

    # -- writes as the API serves them -----------------------------------------------------------

    def create(self, t: ResourceType, namespace: str, body: Obj) -> Obj:
        obj = copy.deepcopy(body)
        self._check_type(t, obj)
        metadata = obj.setdefault("metadata", {})
        namespace = self._namespace_for(t, namespace, metadata)
        if not metadata.get("name") and metadata.get("generateName"):
            metadata["name"] = metadata["generateName"] + uuid.uuid4().hex[:5]
        name = metadata.get("name")
        if not name:
            raise errors.invalid(t, "", "metadata.name: Required value: name or generateName is required")
        if self.get(t, namespace, name) is not None:
            raise errors.already_exists(t, name)
        if t.has_status:
            obj.pop("status", None)
        return self.insert(t, obj)

    def replace(self, t: ResourceType, namespace: str, name: str, body: Obj, status_only: bool = False) -> Obj:
        live = self.require(t, namespace, name)
        obj = copy.deepcopy(body)
        self._check_type(t, obj)
        metadata = obj.setdefault("metadata", {})
        self._check_name(metadata, name)
        sent_version = metadata.get("resourceVersion")
        if sent_version and sent_version != live["metadata"]["resourceVersion"]:
            raise errors.conflict(t, name)
        if status_only:
            new = copy.deepcopy(live)
            new["status"] = obj.get("status") or {}
        else:
            new = obj
            if t.has_status:
                new.pop("status", None)
                if "status" in live:
                    new["status"] = copy.deepcopy(live["status"])
        return self._write(t, live, new)

    def apply(self, t: ResourceType, namespace: str, name: str, body: Obj) -> tuple[Obj, bool]:
        """Server-side apply (see `sim.patching`); returns (object, created)."""
        self._check_type(t, body)
        metadata = body.get("metadata") or {}
        self._check_name(metadata, name)
        live = self.get(t, namespace, name)
        if live is None:
            body = copy.deepcopy(body)
            body["metadata"] = {**metadata, "name": name}
            return self.create(t, namespace, body), True
        _check_version(t, live, metadata)
        return self._write(t, live, apply_onto(live, body, keep_status=t.has_status)), False

    def merge(self, t: ResourceType, namespace: str, name: str, patch: Obj, status_only: bool = False) -> Obj:
        live = self.require(t, namespace, name)
        _check_version(t, live, patch.get("metadata"))
        patched = merge_patch(live, patch)
        if status_only:
            new = copy.deepcopy(live)
            if "status" in patched:
                new["status"] = patched["status"]
        else:
            new = patched
            if t.has_status and "status" in live:
                new["status"] = copy.deepcopy(live["status"])
            elif t.has_status:
                new.pop("status", None)
        return self._write(t, live, new)

    def delete(self, t: ResourceType, namespace: str, name: str,
               preconditions: dict[str, Any] | None = None) -> tuple[Obj, bool]:
        """(object, gone): an object with finalizers is only marked for deletion. `preconditions`
        (DeleteOptions') uid and resourceVersion must match the object's, or nothing is deleted (409)."""
        live = self.require(t, namespace, name)
        for key, field in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
            wanted = (preconditions or {}).get(key)
            if wanted and wanted != live["metadata"].get(key):
                raise errors.precondition_failed(t, name, field, str(wanted), str(live["metadata"].get(key, "")))
        if live["metadata"].get("finalizers"):
            if "deletionTimestamp" not in live["metadata"]:
                live["metadata"]["deletionTimestamp"] = rfc3339(self.clock.now())
                live["metadata"]["deletionGracePeriodSeconds"] = 0
                self.touch(live)
            return live, False
        return self.remove(t, namespace, name) or live, True

    # -- bookkeeping shared with the controllers ---------------------------------------------------

    def insert(self, t: ResourceType, obj: Obj) -> Obj:
        metadata = obj["metadata"]
        namespace = metadata.get("namespace", "") if t.namespaced else ""
        if t.namespaced:
            self.ensure_namespace(namespace)
        else:
            metadata.pop("namespace", None)
        for key in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields"):
            metadata.pop(key, None)
        metadata["uid"] = str(uuid.uuid4())
        metadata["creationTimestamp"] = rfc3339(self.clock.now())
        if _tracks_generation(t):
            metadata["generation"] = 1
        obj["apiVersion"], obj["kind"] = t.api_version, t.kind
        _default(t, obj)
        self._objects.setdefault(t.key, {})[(namespace, metadata["name"])] = obj
        self._order.pop(t.key, None)
        self.touch(obj, "ADDED")
        return obj

    def remove(self, t: ResourceType, namespace: str, name: str) -> Obj | None:
        obj = self._objects.get(t.key, {}).pop((namespace if t.namespaced else "", name), None)
        if obj is not None:
            self._order.pop(t.key, None)
            self.touch(obj, "DELETED")
        return obj

    def remove_resource(self, group: str, plural: str) -> None:
        self._order.pop((group, plural), None)
        for obj in self._objects.pop((group, plural), {}).values():
            self.touch(obj, "DELETED")

    def touch(self, obj: Obj, change: str = "MODIFIED") -> None:
        # A deletion gets a version of its own too, as in etcd: watchers resume past it.
        self.revision += 1
        obj["metadata"]["resourceVersion"] = str(self.revision)
        self.history.record(change, obj, self.revision)
        self._index_controller(obj, change)
        if change == "DELETED":
            self._encoded.pop(_ident(obj), None)

    def set_status(self, obj: Obj, status: dict[str, Any]) -> bool:
        """Controller status write; bumps resourceVersion only when something changed."""
        if obj.get("status") == status:
            return False
        obj["status"] = status
        self.touch(obj)
        return True

    def ensure_namespace(self, name: str) -> None:
        if self.get(NAMESPACE, "", name) is None:
            self.insert(NAMESPACE, {"metadata": {"name": name}, "spec": {"finalizers": ["kubernetes"]},
                                    "status": {"phase": "Active"}})

    def remove_namespace_contents(self, namespace: str) -> list[tuple[tuple[str, str], Obj]]:
        removed = []
        self._order.clear()
        for key, bucket in self._objects.items():
            for obj_key in [k for k in bucket if k[0] == namespace]:
                obj = bucket.pop(obj_key)
                self.touch(obj, "DELETED")
                removed.append((key, obj))
        return removed

    # -- helpers ----------------------------------------------------------------------------------

    def _index_controller(self, obj: Obj, change: str) -> None:
        # Every write of an object goes through `touch`, so the index follows each one.
        ident = _ident(obj)
        uid = None if change == "DELETED" else pods.controller_uid(obj)
        new = None if uid is None else (ident[0], ident[1], uid)
        old = self._controller_of.get(ident)
        if old == new:
            return
        if old is not None:
            bucket = self._controlled[old]
            bucket.pop(ident[2:], None)
            if not bucket:
                del self._controlled[old]
            del self._controller_of[ident]
        if new is not None:
            self._controlled.setdefault(new, {})[ident[2:]] = None
            self._controller_of[ident] = new

    def _write(self, t: ResourceType, live: Obj, new: Obj) -> Obj:
        metadata, old = new.setdefault("metadata", {}), live["metadata"]
        metadata.pop("managedFields", None)
        for key in ("uid", "creationTimestamp", "namespace", "name", "deletionTimestamp",
                    "deletionGracePeriodSeconds", "generation", "resourceVersion"):
            if key in old:
                metadata[key] = old[key]
            else:
                metadata.pop(key, None)
        new["apiVersion"], new["kind"] = t.api_version, t.kind
        _default(t, new)
        if _tracks_generation(t) and spec_part(new) != spec_part(live):
            metadata["generation"] = old.get("generation", 0) + 1
        if new == live:
            return live  # a no-op write keeps the resourceVersion, as on a real server
        namespace = old.get("namespace", "") if t.namespaced else ""
        if metadata.get("deletionTimestamp") and not metadata.get("finalizers"):
            self.remove(t, namespace, old["name"])
            return new
        self._objects[t.key][(namespace, old["name"])] = new
        self.touch(new)
        return new

    def _check_type(self, t: ResourceType, obj: Obj) -> None:
        if not isinstance(obj, dict):
            raise errors.bad_request("the body of the request was in an unknown format")
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if (api_version and api_version != t.api_version) or (kind and kind != t.kind):
            raise errors.bad_request(f"the API version in the data ({api_version}) or kind ({kind}) does not match "
                                     f"the expected API version ({t.api_version}) or kind ({t.kind})")
        if not isinstance(obj.get("metadata", {}), dict):
            raise errors.bad_request("metadata must be an object")

    def _namespace_for(self, t: ResourceType, namespace: str, metadata: dict[str, Any]) -> str:
        if not t.namespaced:
            return ""
        sent = metadata.get("namespace")
        if sent and sent != namespace:
            raise errors.bad_request("the namespace of the provided object does not match the namespace sent "
                                     "on the request")
        metadata["namespace"] = namespace
        return namespace

    @staticmethod
    def _check_name(metadata: dict[str, Any], name: str) -> None:
        sent = metadata.get("name")
        if sent and sent != name:
            raise errors.bad_request(f"the name of the object ({sent}) does not match the name on the URL ({name})")


def _check_version(t: ResourceType, live: Obj, metadata: Any) -> None:
    """A patch that names a resourceVersion applies only to that version (409 otherwise), as an
    update does: a client's optimistic lock."""
    sent = metadata.get("resourceVersion") if isinstance(metadata, dict) else None
    if sent and sent != live["metadata"]["resourceVersion"]:
        raise errors.conflict(t, live["metadata"]["name"])


def list_item(t: ResourceType, obj: Obj) -> Obj:
    """`obj` as a list carries it: lists of built-in kinds carry apiVersion/kind only on the list
    itself. Shares the object's contents."""
    return obj if t.custom else {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}


def _ident(obj: Obj) -> Ident:
    metadata = obj["metadata"]
    return str(obj.get("apiVersion", "")), str(obj.get("kind", "")), metadata.get("namespace", ""), metadata["name"]


def _tracks_generation(t: ResourceType) -> bool:
    return t.has_status or t.custom


_REPLICATED = {("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "ReplicaSet")}


def _default(t: ResourceType, obj: Obj) -> None:
    """The API server's defaults that the simulated controllers and health rules read."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if (t.group, t.kind) in _REPLICATED:
        spec.setdefault("replicas", 1)
    if (t.group, t.kind) == ("apps", "Deployment"):
        strategy = spec.setdefault("strategy", {})
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = strategy.setdefault("rollingUpdate", {})
            rolling.setdefault("maxUnavailable", "25%")
            rolling.setdefault("maxSurge", "25%")
    if (t.group, t.kind) == ("batch", "Job") and "completions" not in spec and "parallelism" not in spec:
        spec["completions"] = spec["parallelism"] = 1
