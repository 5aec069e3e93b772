"""Which message type, etcd resource and scope every kind has.

Built-in kinds are Flotilla's own (Karmada's API, Lease, Event). Any other
kind is a resource template, stored as `Unstructured` under `<plural>.<group>`
(`<plural>` for the core group), the way the Kubernetes API server names
resources.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from google.protobuf.message import Message

from flotilla.api.v1 import (
    apps_pb2,
    cluster_pb2,
    config_pb2,
    coordination_pb2,
    core_pb2,
    meta_pb2,
    policy_pb2,
    work_pb2,
)


class UnknownResourceError(LookupError):
    """A name that no registered kind answers to, or a built-in kind at a version it does not have."""


M = TypeVar("M", bound=Message)
# Covariant: a ResourceType[ResourceBinding] is a ResourceType[Binding], as it only hands out its class.
M_co = TypeVar("M_co", bound=Message, covariant=True)


@dataclass(frozen=True)
class ResourceType(Generic[M_co]):
    """A kind, typed by its message class so the store returns that class."""

    kind: str
    api_version: str
    plural: str
    namespaced: bool
    message: type[M_co]
    short_names: tuple[str, ...] = ()
    # The etcd key segment: the plural for built-ins, `<plural>.<group>` for templates.
    resource: str = ""
    singular: str = field(default="")

    def __post_init__(self) -> None:
        if not self.singular:
            object.__setattr__(self, "singular", self.kind.lower())
        if not self.resource:
            object.__setattr__(self, "resource", self.plural)

    @property
    def group(self) -> str:
        return split_api_version(self.api_version)[0]

    @property
    def version(self) -> str:
        return split_api_version(self.api_version)[1]

    @property
    def is_template(self) -> bool:
        return self.message is meta_pb2.Unstructured


def split_api_version(api_version: str) -> tuple[str, str]:
    """`apps/v1` -> ("apps", "v1"); the core group `v1` -> ("", "v1")."""
    group, _, version = api_version.rpartition("/")
    return group, version


CLUSTER_API = "cluster.karmada.io/v1alpha1"
POLICY_API = "policy.karmada.io/v1alpha1"
WORK_API = "work.karmada.io/v1alpha1"
BINDING_API = "work.karmada.io/v1alpha2"
CONFIG_API = "config.karmada.io/v1alpha1"
APPS_API = "apps.karmada.io/v1alpha1"
COORDINATION_API = "coordination.k8s.io/v1"
CORE_API = "v1"

CLUSTER: ResourceType[cluster_pb2.Cluster] = ResourceType(
    "Cluster", CLUSTER_API, "clusters", False, cluster_pb2.Cluster
)
PROPAGATION_POLICY: ResourceType[policy_pb2.PropagationPolicy] = ResourceType(
    "PropagationPolicy", POLICY_API, "propagationpolicies", True, policy_pb2.PropagationPolicy, ("pp",)
)
CLUSTER_PROPAGATION_POLICY: ResourceType[policy_pb2.ClusterPropagationPolicy] = ResourceType(
    "ClusterPropagationPolicy",
    POLICY_API,
    "clusterpropagationpolicies",
    False,
    policy_pb2.ClusterPropagationPolicy,
    ("cpp",),
)
CLUSTER_TAINT_POLICY: ResourceType[policy_pb2.ClusterTaintPolicy] = ResourceType(
    "ClusterTaintPolicy", POLICY_API, "clustertaintpolicies", False, policy_pb2.ClusterTaintPolicy
)
OVERRIDE_POLICY: ResourceType[policy_pb2.OverridePolicy] = ResourceType(
    "OverridePolicy", POLICY_API, "overridepolicies", True, policy_pb2.OverridePolicy, ("op",)
)
CLUSTER_OVERRIDE_POLICY: ResourceType[policy_pb2.ClusterOverridePolicy] = ResourceType(
    "ClusterOverridePolicy", POLICY_API, "clusteroverridepolicies", False, policy_pb2.ClusterOverridePolicy, ("cop",)
)
RESOURCE_BINDING: ResourceType[work_pb2.ResourceBinding] = ResourceType(
    "ResourceBinding", BINDING_API, "resourcebindings", True, work_pb2.ResourceBinding, ("rb",)
)
CLUSTER_RESOURCE_BINDING: ResourceType[work_pb2.ClusterResourceBinding] = ResourceType(
    "ClusterResourceBinding",
    BINDING_API,
    "clusterresourcebindings",
    False,
    work_pb2.ClusterResourceBinding,
    ("crb",),
)
WORK: ResourceType[work_pb2.Work] = ResourceType("Work", WORK_API, "works", True, work_pb2.Work)
RESOURCE_INTERPRETER_CUSTOMIZATION: ResourceType[config_pb2.ResourceInterpreterCustomization] = ResourceType(
    "ResourceInterpreterCustomization",
    CONFIG_API,
    "resourceinterpretercustomizations",
    False,
    config_pb2.ResourceInterpreterCustomization,
)
WORKLOAD_REBALANCER: ResourceType[apps_pb2.WorkloadRebalancer] = ResourceType(
    "WorkloadRebalancer", APPS_API, "workloadrebalancers", False, apps_pb2.WorkloadRebalancer
)
LEASE: ResourceType[coordination_pb2.Lease] = ResourceType(
    "Lease", COORDINATION_API, "leases", True, coordination_pb2.Lease
)
EVENT: ResourceType[core_pb2.Event] = ResourceType("Event", CORE_API, "events", True, core_pb2.Event, ("ev",))

BUILTINS: tuple[ResourceType[Any], ...] = (
    CLUSTER,
    PROPAGATION_POLICY,
    CLUSTER_PROPAGATION_POLICY,
    CLUSTER_TAINT_POLICY,
    OVERRIDE_POLICY,
    CLUSTER_OVERRIDE_POLICY,
    RESOURCE_BINDING,
    CLUSTER_RESOURCE_BINDING,
    WORK,
    RESOURCE_INTERPRETER_CUSTOMIZATION,
    WORKLOAD_REBALANCER,
    LEASE,
    EVENT,
)

# Cluster-scoped kinds of Kubernetes' own groups; every other template kind is
# assumed namespaced (CRDs from other groups cannot be known without discovery).
CLUSTER_SCOPED_KINDS: frozenset[tuple[str, str]] = frozenset(
    {
        ("", "Namespace"),
        ("", "Node"),
        ("", "PersistentVolume"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("storage.k8s.io", "StorageClass"),
        ("storage.k8s.io", "CSIDriver"),
        ("storage.k8s.io", "VolumeAttachment"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("networking.k8s.io", "IngressClass"),
        ("node.k8s.io", "RuntimeClass"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("apiregistration.k8s.io", "APIService"),
    }
)

# Templates users name on the command line (`get deployments`, `get deploy`),
# with kubectl's short names. Irregular plurals are spelled out.
_WELL_KNOWN_TEMPLATES: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    ("apps/v1", "Deployment", ("deploy",), ""),
    ("apps/v1", "StatefulSet", ("sts",), ""),
    ("apps/v1", "DaemonSet", ("ds",), ""),
    ("apps/v1", "ReplicaSet", ("rs",), ""),
    ("batch/v1", "Job", (), ""),
    ("batch/v1", "CronJob", ("cj",), ""),
    ("v1", "Pod", ("po",), ""),
    ("v1", "Service", ("svc",), ""),
    ("v1", "ConfigMap", ("cm",), ""),
    ("v1", "Secret", (), ""),
    ("v1", "ServiceAccount", ("sa",), ""),
    ("v1", "PersistentVolumeClaim", ("pvc",), ""),
    ("v1", "PersistentVolume", ("pv",), ""),
    ("v1", "Namespace", ("ns",), ""),
    ("v1", "Node", ("no",), ""),
    # Kubernetes' Endpoints: named so that it is refused (RESERVED_RESOURCES), not stored as "endpointses".
    ("v1", "Endpoints", ("ep",), "endpoints"),
    ("networking.k8s.io/v1", "Ingress", ("ing",), ""),
    ("networking.k8s.io/v1", "NetworkPolicy", ("netpol",), ""),
    ("policy/v1", "PodDisruptionBudget", ("pdb",), ""),
    ("autoscaling/v2", "HorizontalPodAutoscaler", ("hpa",), ""),
    ("rbac.authorization.k8s.io/v1", "Role", (), ""),
    ("rbac.authorization.k8s.io/v1", "RoleBinding", (), ""),
    ("rbac.authorization.k8s.io/v1", "ClusterRole", (), ""),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", (), ""),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition", ("crd", "crds"), ""),
    ("storage.k8s.io/v1", "StorageClass", ("sc",), ""),
    ("scheduling.k8s.io/v1", "PriorityClass", ("pc",), ""),
)


def plural_of(kind: str) -> str:
    """The resource name Kubernetes tooling derives from a kind.

    Deployment -> deployments, Ingress -> ingresses, Policy -> policies,
    Gateway -> gateways (a vowel before the y keeps it), Box -> boxes.
    """
    lower = kind.lower()
    if re.search(r"(s|x|z|ch|sh)$", lower):
        return lower + "es"
    if re.search(r"[^aeiou]y$", lower):
        return lower[:-1] + "ies"
    return lower + "s"


def template_type(
    api_version: str, kind: str, plural: str = "", short_names: tuple[str, ...] = ()
) -> ResourceType[meta_pb2.Unstructured]:
    """The ResourceType of a resource template (any kind that is not built in)."""
    group, _ = split_api_version(api_version)
    plural = plural or plural_of(kind)
    return ResourceType(
        kind=kind,
        api_version=api_version,
        plural=plural,
        namespaced=(group, kind) not in CLUSTER_SCOPED_KINDS,
        message=meta_pb2.Unstructured,
        short_names=short_names,
        resource=f"{plural}.{group}" if group else plural,
    )


WELL_KNOWN_TEMPLATES: tuple[ResourceType[meta_pb2.Unstructured], ...] = tuple(
    template_type(api_version, kind, plural, short) for api_version, kind, short, plural in _WELL_KNOWN_TEMPLATES
)

# The etcd key segments under /flotilla/ that are Flotilla's own: each built-in's, the service
# endpoint registry's and the leader elections' (flotilla.store.endpoints, flotilla.store.leader),
# and who holds each lease granted through the storage API (services/webhook/storage.py).
ENDPOINTS_SEGMENT, ELECTION_SEGMENT, LEASE_OWNERS_SEGMENT = "endpoints", "election", "leaseowners"
# A service's replicas' membership and claims on their shared work (flotilla.store.shards).
SHARDS_SEGMENT = "shards"
RESERVED_RESOURCES: frozenset[str] = frozenset(
    {rt.resource for rt in BUILTINS} | {ENDPOINTS_SEGMENT, ELECTION_SEGMENT, LEASE_OWNERS_SEGMENT, SHARDS_SEGMENT})
BUILTIN_BY_RESOURCE: dict[str, ResourceType[Any]] = {rt.resource: rt for rt in BUILTINS}
_BY_KIND: dict[tuple[str, str], ResourceType[Any]] = {(rt.api_version, rt.kind): rt for rt in BUILTINS}
_BUILTIN_GROUP_KINDS: dict[tuple[str, str], ResourceType[Any]] = {(rt.group, rt.kind): rt for rt in BUILTINS}
_BY_MESSAGE: dict[type[Message], ResourceType[Any]] = {rt.message: rt for rt in BUILTINS}


def _names(rt: ResourceType[Any]) -> set[str]:
    names = {rt.kind.lower(), rt.singular, rt.plural, *rt.short_names}
    if rt.group:
        names |= {f"{rt.plural}.{rt.group}", f"{rt.singular}.{rt.group}"}
    return names


def _index() -> dict[str, ResourceType[Any]]:
    index: dict[str, ResourceType[Any]] = {}
    # Built-ins last so that they win any clash with a template's name.
    # A template stored where Flotilla keeps its own (Endpoints) is no resource one can name.
    held = [rt for rt in WELL_KNOWN_TEMPLATES if rt.resource not in RESERVED_RESOURCES]
    for rt in (*held, *BUILTINS):
        for name in _names(rt):
            index[name] = rt
    return index


_BY_NAME = _index()


def lookup(name: str) -> ResourceType[Any]:
    """Resolve a kind ("Cluster"), plural, singular, short name ("rb") or `plural.group`, any case.

    Knows the built-in kinds and the common Kubernetes template kinds.
    """
    try:
        return _BY_NAME[name.lower()]
    except KeyError:
        raise UnknownResourceError(f'the server doesn\'t have a resource type "{name}"') from None


KARMADA_GROUP = "karmada.io"
# Karmada kinds being built in as this is written (issue 36): until they are BUILTINS they stay
# what they were (templates), so that admitting them is not refused in the meantime.
KARMADA_KINDS_BEING_BUILT: frozenset[tuple[str, str]] = frozenset({
    ("policy.karmada.io", "OverridePolicy"),
    ("policy.karmada.io", "ClusterOverridePolicy"),
})


class UnsupportedKindError(UnknownResourceError):
    """A kind of Karmada's API that Flotilla does not build: refused rather than stored and ignored."""


def is_karmada_group(group: str) -> bool:
    """Whether the group is Karmada's API (`karmada.io`, `*.karmada.io`), whose objects Karmada's
    detector never takes for resource templates, so never propagates."""
    return group == KARMADA_GROUP or group.endswith("." + KARMADA_GROUP)


def for_kind(api_version: str, kind: str) -> ResourceType[Any]:
    """The ResourceType of an object with this apiVersion and kind.

    Unknown kinds are resource templates (Unstructured). A built-in kind at
    another version of its group (an old `work.karmada.io/v1alpha1`
    ResourceBinding) is an error rather than a template, and so is any other
    kind of a karmada.io group (UnsupportedKindError).
    """
    found = _BY_KIND.get((api_version, kind))
    if found is not None:
        return found
    if not api_version or not kind:
        # An object built in code without its type fields would otherwise
        # become a template of kind "" stored under resource "s".
        raise UnknownResourceError(f'apiVersion and kind are required, got "{api_version}" and "{kind}"')
    group, _ = split_api_version(api_version)
    builtin = _BUILTIN_GROUP_KINDS.get((group, kind))
    if builtin is not None:
        raise UnknownResourceError(f'{kind} is served at apiVersion "{builtin.api_version}", not "{api_version}"')
    if is_karmada_group(group) and (group, kind) not in KARMADA_KINDS_BEING_BUILT:
        # Stored as a template it would be kept and ignored (a FederatedResourceQuota that limits
        # nothing), and a policy selecting it would propagate Karmada's API to the members.
        raise UnsupportedKindError(f"{kind} ({group}) is not supported by Flotilla")
    rt = next((t for t in WELL_KNOWN_TEMPLATES if t.api_version == api_version and t.kind == kind), None) \
        or template_type(api_version, kind)
    if rt.resource in RESERVED_RESOURCES:
        # A core-group template is stored under its bare plural, as Kubernetes stores it: one
        # named like Flotilla's own would be read and overwritten as them, without their checks.
        raise UnknownResourceError(
            f'{kind} of apiVersion "{api_version}" would be stored as "{rt.resource}", where Flotilla keeps its '
            f"own; it is not a kind Flotilla can hold")
    return rt


def for_message(message_cls: type[M]) -> ResourceType[M]:
    """The built-in ResourceType whose objects are this message class."""
    try:
        return _BY_MESSAGE[message_cls]
    except KeyError:
        raise UnknownResourceError(
            f"{message_cls.DESCRIPTOR.full_name} is not a built-in kind; use for_kind(api_version, kind)"
        ) from None


def for_object(obj: M) -> ResourceType[M]:
    """The ResourceType of a message object, built-in or template, from its apiVersion and kind."""
    if type(obj) in _BY_MESSAGE:
        return _BY_MESSAGE[type(obj)]
    # Templates (Unstructured) and any message with type fields say their own kind.
    return for_kind(getattr(obj, "api_version", ""), getattr(obj, "kind", ""))
