"""Reading Kubernetes discovery documents: which resources a group/version serves."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["AGGREGATED_ACCEPT", "ApiResource", "api_enablements", "group_versions", "resource_lists",
           "resources_of"]

# Aggregated discovery first, as client-go asks (Kubernetes 1.30+ answers /api and /apis with
# every group's resources in one document); a server without it answers the plain documents.
AGGREGATED_ACCEPT = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"


@dataclass(frozen=True)
class ApiResource:
    group_version: str
    name: str  # the plural used in paths, e.g. "deployments"
    kind: str
    namespaced: bool

    @property
    def base_path(self) -> str:
        """"/api/v1" for the core group, "/apis/<group>/<version>" otherwise."""
        return f"/api/{self.group_version}" if "/" not in self.group_version else f"/apis/{self.group_version}"


def group_versions(core: dict[str, Any], groups: dict[str, Any]) -> list[str]:
    """Every group/version the server offers, from `/api` (APIVersions) and `/apis` (APIGroupList).

    All versions of a group count, not only the preferred one: client-go's
    ServerGroupsAndResources, which Karmada uses, fetches them all.
    """
    found = [str(v) for v in core.get("versions") or []]
    for group in groups.get("groups") or []:
        found.extend(str(v["groupVersion"]) for v in group.get("versions") or [] if v.get("groupVersion"))
    return found


def resource_lists(core: dict[str, Any], groups: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The APIResourceLists that aggregated discovery answers for /api and /apis hold, or None
    when they are the plain documents (the caller then reads each group/version's list)."""
    if core.get("kind") != "APIGroupDiscoveryList" or groups.get("kind") != "APIGroupDiscoveryList":
        return None
    lists = []
    for group in [*(core.get("items") or []), *(groups.get("items") or [])]:
        name = str((group.get("metadata") or {}).get("name") or "")
        for version in group.get("versions") or []:
            lists.append({"groupVersion": f"{name}/{version.get('version')}" if name else str(version.get("version")),
                          "resources": [{"name": r.get("resource"), "kind": (r.get("responseKind") or {}).get("kind"),
                                         "namespaced": r.get("scope") == "Namespaced"}
                                        for r in version.get("resources") or []]})
    return lists


def resources_of(resource_list: dict[str, Any]) -> list[ApiResource]:
    """The top-level resources of an APIResourceList; subresources ("deployments/status") skipped."""
    group_version = str(resource_list.get("groupVersion", ""))
    return [
        ApiResource(group_version, str(r["name"]), str(r.get("kind", "")), bool(r.get("namespaced", False)))
        for r in resource_list.get("resources") or []
        if "/" not in str(r.get("name", ""))
    ]


def api_enablements(resource_lists: list[dict[str, Any]]) -> list[tuple[str, list[tuple[str, str]]]]:
    """Karmada's `getAPIEnablements`: [(groupVersion, [(name, kind)])], subresources skipped,
    resources sorted by name within a group/version and group/versions sorted by string."""
    enablements = []
    for resource_list in resource_lists:
        resources = sorted(((r.name, r.kind) for r in resources_of(resource_list)), key=lambda nk: nk[0])
        enablements.append((str(resource_list.get("groupVersion", "")), resources))
    return sorted(enablements, key=lambda e: e[0])
