"""The resource types one simulated cluster serves, and the discovery documents that describe them.

Built-in types are the subset Flotilla uses; a CustomResourceDefinition adds its served versions
when it is created and takes them away when it is deleted.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from sim.accept import negotiated

VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update"]
SUBRESOURCE_VERBS = ["get", "patch", "update"]


@dataclass(frozen=True)
class ResourceType:
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()  # "status", "scale"
    custom: bool = False

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> tuple[str, str]:
        """Storage identity: all versions of a resource share one set of objects."""
        return self.group, self.plural

    @property
    def qualified(self) -> str:
        """How Kubernetes names the resource in messages: "deployments.apps", "pods"."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources


def _t(group: str, version: str, kind: str, plural: str, namespaced: bool = True, short: tuple[str, ...] = (),
       sub: tuple[str, ...] = (), categories: tuple[str, ...] = ()) -> ResourceType:
    return ResourceType(group, version, kind, plural, namespaced, kind.lower(), short, categories, sub)


_ALL = ("all",)
BUILTIN: tuple[ResourceType, ...] = (
    _t("", "v1", "Namespace", "namespaces", False, ("ns",), ("status",)),
    _t("", "v1", "Node", "nodes", False, ("no",), ("status",)),
    _t("", "v1", "Pod", "pods", True, ("po",), ("status",), _ALL),
    _t("", "v1", "ConfigMap", "configmaps", True, ("cm",)),
    _t("", "v1", "Secret", "secrets", True),
    _t("", "v1", "Service", "services", True, ("svc",), ("status",), _ALL),
    _t("", "v1", "ServiceAccount", "serviceaccounts", True, ("sa",)),
    _t("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", True, ("pvc",), ("status",)),
    _t("", "v1", "Event", "events", True, ("ev",)),
    _t("apps", "v1", "Deployment", "deployments", True, ("deploy",), ("scale", "status"), _ALL),
    _t("apps", "v1", "StatefulSet", "statefulsets", True, ("sts",), ("scale", "status"), _ALL),
    _t("apps", "v1", "ReplicaSet", "replicasets", True, ("rs",), ("scale", "status"), _ALL),
    _t("apps", "v1", "DaemonSet", "daemonsets", True, ("ds",), ("status",), _ALL),
    _t("batch", "v1", "Job", "jobs", True, (), ("status",), _ALL),
    _t("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True, ("pdb",), ("status",)),
    _t("networking.k8s.io", "v1", "Ingress", "ingresses", True, ("ing",), ("status",)),
    _t("coordination.k8s.io", "v1", "Lease", "leases", True),
    _t("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False,
       ("crd", "crds"), ("status",)),
)

CRD = BUILTIN[-1]
NAMESPACE = BUILTIN[0]
NODE = BUILTIN[1]
POD = BUILTIN[2]


def builtin(kind: str) -> ResourceType:
    return next(t for t in BUILTIN if t.kind == kind)


def types_of_crd(crd: dict[str, Any]) -> list[ResourceType]:
    """The resource types a CustomResourceDefinition serves (one per served version)."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    found = []
    for version in spec.get("versions") or []:
        if not version.get("served", True):
            continue
        sub = version.get("subresources") or {}
        found.append(ResourceType(
            group=spec["group"], version=version["name"], kind=names["kind"], plural=names["plural"],
            namespaced=spec.get("scope", "Namespaced") == "Namespaced",
            singular=names.get("singular") or names["kind"].lower(),
            short_names=tuple(names.get("shortNames") or ()), categories=tuple(names.get("categories") or ()),
            subresources=tuple(s for s in ("scale", "status") if s in sub), custom=True,
        ))
    return found


def crd_document(group: str, version: str, kind: str, plural: str, namespaced: bool) -> dict[str, Any]:
    """A minimal CRD manifest (schema preserving unknown fields, status subresource on)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
            "scope": "Namespaced" if namespaced else "Cluster",
            "versions": [{
                "name": version, "served": True, "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                "subresources": {"status": {}},
            }],
        },
    }


def plural_of(kind: str) -> str:
    """English plural of a kind, for CRD shorthands that leave the plural out."""
    word = kind.lower()
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    if word.endswith("y") and word[-2:-1] not in ("a", "e", "i", "o", "u"):
        return word[:-1] + "ies"
    return word + "s"


@dataclass
class Catalog:
    """The types one cluster serves, looked up by path (group, version, plural) or by kind."""

    types: dict[tuple[str, str, str], ResourceType] = field(default_factory=dict)

    @classmethod
    def with_builtins(cls) -> Catalog:
        catalog = cls()
        for t in BUILTIN:
            catalog.add(t)
        return catalog

    def add(self, t: ResourceType) -> None:
        self.types[(t.group, t.version, t.plural)] = t

    def remove_group_resource(self, group: str, plural: str) -> None:
        for key in [k for k, t in self.types.items() if t.key == (group, plural)]:
            del self.types[key]

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self.types.get((group, version, plural))

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        return next((t for t in self.types.values() if t.api_version == api_version and t.kind == kind), None)

    def group_versions(self) -> dict[str, list[str]]:
        """group -> versions, each list in the order the types were added (first is preferred)."""
        groups: dict[str, list[str]] = {}
        for t in self.types.values():
            versions = groups.setdefault(t.group, [])
            if t.version not in versions:
                versions.append(t.version)
        return groups

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [t for t in self.types.values() if t.group == group and t.version == version]


# -- discovery documents ---------------------------------------------------------------------

def api_versions(server_address: str) -> dict[str, Any]:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]}


def api_group(group: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(catalog: Catalog) -> dict[str, Any]:
    groups = [api_group(g, vs) for g, vs in catalog.group_versions().items() if g]
    for group in groups:
        del group["kind"], group["apiVersion"]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


# Aggregated discovery (apidiscovery.k8s.io/v2, GA in Kubernetes 1.30): every group, version and
# resource in the answer to /api or /apis, which client-go (kubectl, Karmada) asks for first.
AGGREGATED_DISCOVERY = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def wants_aggregated_discovery(accept: str) -> bool:
    """Whether the Accept header asks for the aggregated JSON document before plain JSON (a
    protobuf entry ahead of it is passed over: the simulator speaks JSON only)."""
    return negotiated(accept, "APIGroupDiscoveryList", "apidiscovery.k8s.io", ("v2",)) is not None


def aggregated_discovery(catalog: Catalog, core: bool) -> dict[str, Any]:
    """The APIGroupDiscoveryList of the core group (/api) or of every other group (/apis)."""
    items = []
    for group, versions in catalog.group_versions().items():
        if bool(group) == core:
            continue
        items.append({"metadata": {"name": group, "creationTimestamp": None}, "versions": [
            {"version": v, "resources": [_discovered(t) for t in sorted(catalog.in_group_version(group, v),
                                                                          key=lambda t: t.plural)],
             "freshness": "Current"} for v in versions]})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items}


def aggregated_discovery_document(catalog: Catalog, core: bool) -> tuple[bytes, str]:
    """The aggregated document's JSON and its ETag, as the API server's handler gives them (a
    quoted, uppercase hex SHA-512 of the document): a client that sends the ETag back in
    If-None-Match is answered 304 Not Modified while the catalog is unchanged. Made once per
    catalog: a member's discovery is read at every status collection."""
    return _aggregated_document(tuple(catalog.types.values()), core)


@functools.lru_cache(maxsize=64)
def _aggregated_document(types: tuple[ResourceType, ...], core: bool) -> tuple[bytes, str]:
    catalog = Catalog({(t.group, t.version, t.plural): t for t in types})
    body = json.dumps(aggregated_discovery(catalog, core)).encode()
    return body, f'"{hashlib.sha512(body).hexdigest().upper()}"'


def _discovered(t: ResourceType) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "resource": t.plural, "responseKind": {"group": t.group, "version": t.version, "kind": t.kind},
        "scope": "Namespaced" if t.namespaced else "Cluster", "singularResource": t.singular, "verbs": VERBS}
    if t.short_names:
        entry["shortNames"] = list(t.short_names)
    if t.categories:
        entry["categories"] = list(t.categories)
    if t.subresources:
        entry["subresources"] = [{
            "subresource": sub, "verbs": SUBRESOURCE_VERBS,
            "responseKind": ({"group": "autoscaling", "version": "v1", "kind": "Scale"} if sub == "scale"
                             else {"group": t.group, "version": t.version, "kind": t.kind}),
        } for sub in t.subresources]
    return entry


def api_resource_list(catalog: Catalog, group: str, version: str) -> dict[str, Any] | None:
    types = catalog.in_group_version(group, version)
    if not types:
        return None
    resources: list[dict[str, Any]] = []
    for t in sorted(types, key=lambda t: t.plural):
        entry: dict[str, Any] = {"name": t.plural, "singularName": t.singular, "namespaced": t.namespaced,
                                 "kind": t.kind, "verbs": VERBS}
        if t.short_names:
            entry["shortNames"] = list(t.short_names)
        if t.categories:
            entry["categories"] = list(t.categories)
        resources.append(entry)
        for sub in t.subresources:
            scale = sub == "scale"
            resources.append({
                "name": f"{t.plural}/{sub}", "singularName": "", "namespaced": t.namespaced,
                **({"group": "autoscaling", "version": "v1"} if scale else {}),
                "kind": "Scale" if scale else t.kind, "verbs": SUBRESOURCE_VERBS,
            })
    api_version = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": api_version, "resources": resources}
