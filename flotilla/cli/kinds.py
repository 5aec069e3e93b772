"""Which apiVersion/kind pairs a Karmada API server would accept, as `kubectl apply` finds out
through discovery before it writes anything.

Flotilla stores a template of any kind, so without this check a typo (`kind: ConfigMapp`,
`apiVersion: apps/v2`) would be stored silently and never propagated. Known are: Kubernetes'
built-in kinds at the versions a current API server serves, Karmada's own kinds, and every
kind a CustomResourceDefinition declares — one already applied, or one in the same apply.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

from flotilla.api import registry

CRD_API_VERSION = "apiextensions.k8s.io/v1"
CRD_KIND = "CustomResourceDefinition"

# apiVersion -> kinds, as a Kubernetes 1.31 API server (with Karmada's aggregated and CRD APIs) serves them.
_SERVED: dict[str, tuple[str, ...]] = {
    "v1": ("Binding", "ComponentStatus", "ConfigMap", "Endpoints", "Event", "LimitRange", "Namespace", "Node",
           "PersistentVolume", "PersistentVolumeClaim", "Pod", "PodTemplate", "ReplicationController",
           "ResourceQuota", "Secret", "Service", "ServiceAccount"),
    "apps/v1": ("ControllerRevision", "DaemonSet", "Deployment", "ReplicaSet", "StatefulSet"),
    "batch/v1": ("CronJob", "Job"),
    "autoscaling/v1": ("HorizontalPodAutoscaler",),
    "autoscaling/v2": ("HorizontalPodAutoscaler",),
    "policy/v1": ("PodDisruptionBudget",),
    "networking.k8s.io/v1": ("Ingress", "IngressClass", "NetworkPolicy"),
    "rbac.authorization.k8s.io/v1": ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"),
    "storage.k8s.io/v1": ("CSIDriver", "CSINode", "CSIStorageCapacity", "StorageClass", "VolumeAttachment"),
    "scheduling.k8s.io/v1": ("PriorityClass",),
    "node.k8s.io/v1": ("RuntimeClass",),
    "coordination.k8s.io/v1": ("Lease",),
    "discovery.k8s.io/v1": ("EndpointSlice",),
    "events.k8s.io/v1": ("Event",),
    "apiextensions.k8s.io/v1": ("CustomResourceDefinition",),
    "admissionregistration.k8s.io/v1": ("MutatingWebhookConfiguration", "ValidatingAdmissionPolicy",
                                        "ValidatingAdmissionPolicyBinding", "ValidatingWebhookConfiguration"),
    "apiregistration.k8s.io/v1": ("APIService",),
    "certificates.k8s.io/v1": ("CertificateSigningRequest",),
    "flowcontrol.apiserver.k8s.io/v1": ("FlowSchema", "PriorityLevelConfiguration"),
    # Karmada's API.
    "cluster.karmada.io/v1alpha1": ("Cluster",),
    "policy.karmada.io/v1alpha1": ("ClusterOverridePolicy", "ClusterPropagationPolicy", "ClusterTaintPolicy",
                                   "FederatedResourceQuota", "OverridePolicy", "PropagationPolicy"),
    "work.karmada.io/v1alpha1": ("Work",),
    "work.karmada.io/v1alpha2": ("ClusterResourceBinding", "ResourceBinding"),
    "config.karmada.io/v1alpha1": ("ResourceInterpreterCustomization", "ResourceInterpreterWebhookConfiguration"),
    "networking.karmada.io/v1alpha1": ("MultiClusterIngress", "MultiClusterService"),
    "autoscaling.karmada.io/v1alpha1": ("CronFederatedHPA", "FederatedHPA"),
    "apps.karmada.io/v1alpha1": ("WorkloadRebalancer",),
    "remedy.karmada.io/v1alpha1": ("Remedy",),
    "search.karmada.io/v1alpha1": ("ResourceRegistry",),
}


def served_kinds() -> set[tuple[str, str]]:
    """(apiVersion, kind) of every built-in kind, Kubernetes' and Karmada's."""
    known = {(api_version, kind) for api_version, kinds in _SERVED.items() for kind in kinds}
    known |= {(rt.api_version, rt.kind) for rt in (*registry.BUILTINS, *registry.WELL_KNOWN_TEMPLATES)}
    return known


def crd_kinds(crd: Mapping[str, Any]) -> set[tuple[str, str]]:
    """(apiVersion, kind) for each version a CustomResourceDefinition serves."""
    found_spec = crd.get("spec")
    spec: Mapping[str, Any] = found_spec if isinstance(found_spec, Mapping) else {}
    found_names = spec.get("names")
    names: Mapping[str, Any] = found_names if isinstance(found_names, Mapping) else {}
    group, kind = spec.get("group"), names.get("kind")
    if not isinstance(group, str) or not isinstance(kind, str) or not group or not kind:
        return set()
    versions = [v.get("name") for v in spec.get("versions") or []
                if isinstance(v, Mapping) and v.get("served", True) is not False]
    if spec.get("version"):  # apiextensions v1beta1's single version
        versions.append(spec["version"])
    return {(f"{group}/{v}", kind) for v in versions if isinstance(v, str) and v}


def is_crd(doc: Mapping[str, Any]) -> bool:
    return doc.get("kind") == CRD_KIND and str(doc.get("apiVersion", "")).startswith("apiextensions.k8s.io/")


class KnownKinds:
    """The kinds an apply may write: built-ins plus those the given CRDs declare."""

    def __init__(self, crds: Iterable[Mapping[str, Any]] = ()) -> None:
        self.known = served_kinds()
        for crd in crds:
            self.known |= crd_kinds(crd)

    def problem(self, doc: Mapping[str, Any]) -> str:
        """Why this document's apiVersion/kind would not be accepted, or "" when it would."""
        api_version, kind = doc.get("apiVersion"), doc.get("kind")
        missing = [f"{field} not set" for field, value in (("apiVersion", api_version), ("kind", kind))
                   if not isinstance(value, str) or not value]
        if missing:
            return ", ".join(missing)
        assert isinstance(api_version, str) and isinstance(kind, str)
        if (api_version, kind) in self.known:
            return ""
        return f'no matches for kind "{kind}" in version "{api_version}"{self._hint(api_version, kind)}'

    def _hint(self, api_version: str, kind: str) -> str:
        elsewhere = sorted(v for v, k in self.known if k == kind)
        if elsewhere:
            return f" ({kind} is served at {' and '.join(elsewhere)})"
        group = registry.split_api_version(api_version)[0]
        same_group = {k for v, k in self.known if registry.split_api_version(v)[0] == group}
        by_lower = {k.lower(): k for k in same_group}
        close = [by_lower[kind.lower()]] if kind.lower() in by_lower else difflib.get_close_matches(
            kind, sorted(same_group), n=1, cutoff=0.8)
        if close:
            return f' (did you mean "{close[0]}"?)'
        if not any(registry.split_api_version(v)[0] == group for v, _ in self.known):
            return " (is its CustomResourceDefinition applied?)"
        return ""
