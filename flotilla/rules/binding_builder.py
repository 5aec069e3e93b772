"""Resource template + propagation policy -> ResourceBinding (Karmada's detector, `BuildResourceBinding`).

Pure: objects in, a new binding out; nothing is read or written. Used by
`flotillactl schedule -f` for a workload-plus-policy file and by the
executor's detector, so a binding looks the same whoever builds it.

What a binding carries:
- `spec.resource` locates the template (apiVersion, kind, namespace, name, uid, resourceVersion);
- `spec.replicas` and `spec.replicaRequirements` as Karmada's native interpreter reads them:
  Deployment, StatefulSet and ReplicaSet `spec.replicas`; Job `spec.parallelism`, capped by
  `spec.completions`; a Pod is one replica; any other kind has none. The per-replica
  resource request is the pod template's effective request (containers summed, raised to
  any init container's, plus overhead; limits stand in for missing requests), and the node
  claim carries nodeSelector, tolerations and required node affinity;
- placement, failover, propagateDeps, schedulerName, conflictResolution, suspension and
  preserveResourcesOnDeletion copied from the policy;
- the policy's permanent-id label and name annotations, which is how the scheduler knows a
  policy claimed the binding;
- the binding-controller finalizer and a controller owner reference to the template;
- `spec.schedulePriority.priority` when the policy sets `schedulePriority`: the `value` of the
  PriorityClass it names, which the caller reads (`priority_class_value`) and passes in; this
  module reads nothing.

Kubernetes' API server would default a missing `replicas`/`parallelism` to 1 before Karmada
ever reads it; templates reach Flotilla undefaulted, so 1 is applied here.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from flotilla.api import codec, jsonbytes, keys, registry
from flotilla.api.bindings import Binding
from flotilla.api.v1 import core_pb2, meta_pb2, policy_pb2, work_pb2
from flotilla.api.wellknown import (
    BINDING_FINALIZER,
    CLUSTER_BINDING_FINALIZER,
    CPP_NAME_ANNOTATION,
    CPP_PERMANENT_ID_LABEL,
    DEFAULT_SCHEDULER,
    PP_NAME_ANNOTATION,
    PP_NAMESPACE_ANNOTATION,
    PP_PERMANENT_ID_LABEL,
)
from flotilla.member.quantity import Format, format_quantity
from flotilla.member.summary import pod_requests

Policy = policy_pb2.PropagationPolicy | policy_pb2.ClusterPropagationPolicy


# (apiVersion, kind) -> where the replica count lives; the pod template is at spec.template.spec.
REPLICA_FIELDS = {
    ("apps/v1", "Deployment"): "replicas",
    ("apps/v1", "StatefulSet"): "replicas",
    ("apps/v1", "ReplicaSet"): "replicas",
    ("batch/v1", "Job"): "parallelism",
}
_BINARY_RESOURCES = ("memory", "ephemeral-storage")


def template_content(template: meta_pb2.Unstructured) -> dict[str, Any]:
    """The template's fields other than apiVersion, kind and metadata (spec, status, ...)."""
    content = jsonbytes.loads(template.content or b"{}")
    return content if isinstance(content, dict) else {}


def has_native_replicas(api_version: str, kind: str) -> bool:
    """Whether Karmada's native interpreter knows the kind's replicas (else only a script does)."""
    return (api_version, kind) in REPLICA_FIELDS or (api_version, kind) == ("v1", "Pod")


def template_object(template: meta_pb2.Unstructured) -> dict[str, Any]:
    """The template as the JSON object a Lua interpreter script receives (apiVersion, kind,
    metadata and the content)."""
    metadata = codec.to_dict(template.metadata)
    return {**template_content(template), "apiVersion": template.api_version, "kind": template.kind,
            "metadata": metadata}


def replicas_and_requirements(template: meta_pb2.Unstructured) -> tuple[int, work_pb2.ReplicaRequirements | None]:
    """Karmada's native GetReplicas: the replica count and what one replica needs.

    Kinds without replicas give (0, None): the binding is then a non-workload, placed on
    every selected cluster as a whole.
    """
    content = template_content(template)
    spec = _object(content.get("spec"))
    if (template.api_version, template.kind) == ("v1", "Pod"):
        return 1, _requirements(spec)
    field = REPLICA_FIELDS.get((template.api_version, template.kind))
    if field is None:
        return 0, None
    replicas = _int(spec.get(field), default=1)
    completions = spec.get("completions")
    if field == "parallelism" and isinstance(completions, int) and completions < replicas:
        replicas = completions
    return replicas, _requirements(_object(_object(spec.get("template")).get("spec")))


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _requirements(pod_spec: Mapping[str, Any]) -> work_pb2.ReplicaRequirements:
    requirements = work_pb2.ReplicaRequirements()
    requirements.resource_request.update(resource_request(pod_spec))
    claim = requirements.node_claim
    selector = pod_spec.get("nodeSelector")
    if isinstance(selector, dict):
        claim.node_selector.update({str(k): str(v) for k, v in selector.items()})
    for i, toleration in enumerate(pod_spec.get("tolerations") or []):
        claim.tolerations.append(codec.parse_as(meta_pb2.Toleration, toleration, f"tolerations[{i}]"))
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution")
    if required:
        claim.hard_node_affinity.CopyFrom(codec.parse_as(core_pb2.NodeSelector, required, "affinity"))
    if not (claim.node_selector or claim.tolerations or claim.HasField("hard_node_affinity")):
        requirements.ClearField("node_claim")
    return requirements


def resource_request(pod_spec: Mapping[str, Any]) -> dict[str, str]:
    """One replica's effective request as quantity strings (Karmada's `AddPodTemplateRequest`)."""
    defaulted = copy.deepcopy(dict(pod_spec))
    for group in ("containers", "initContainers"):
        for container in defaulted.get(group) or []:
            resources = container.get("resources") if isinstance(container, dict) else None
            if not isinstance(resources, dict) or not resources.get("limits"):
                continue
            # Kubernetes defaults a missing request to the limit.
            resources["requests"] = {**resources["limits"], **(resources.get("requests") or {})}
    result = {}
    for name, amount in pod_requests(defaulted).items():
        if amount <= 0:
            continue
        if name == "cpu":
            result[name] = format_quantity(Fraction(amount, 1000), Format.DECIMAL_SI)
        elif name in _BINARY_RESOURCES or name.startswith("hugepages-"):
            result[name] = format_quantity(amount, Format.BINARY_SI)
        else:
            result[name] = format_quantity(amount, Format.DECIMAL_SI)
    return result


# Where schedulePriority's KubePriorityClass lives: the only priorityClassSource Karmada implements
# (PodPriorityClass and FederatedPriorityClass fail in its detector; the webhook refuses them here).
PRIORITY_CLASS_API = ("scheduling.k8s.io/v1", "PriorityClass")


def priority_class_value(priority_class: meta_pb2.Unstructured) -> int:
    """A `scheduling.k8s.io/v1` PriorityClass's `value` (top level, beside metadata), 0 when
    it has none: the Kubernetes API server requires it, but templates reach Flotilla unchecked."""
    return _int(template_content(priority_class).get("value"), default=0)


def build_binding(template: meta_pb2.Unstructured, policy: Policy, priority: int | None = None,
                  replicas: tuple[int, work_pb2.ReplicaRequirements | None] | None = None,
                  components: Sequence[work_pb2.Component] | None = None) -> Binding:
    """The binding the detector makes for `template` claimed by `policy` (spec.clusters empty).

    `priority` is the value of the PriorityClass the policy's `schedulePriority` names (Karmada's
    detector resolves it while it builds the binding); without `schedulePriority` it is ignored
    and the binding has none, which the scheduler's queue takes as 0.

    `replicas` is the kind's ResourceInterpreterCustomization answer (`GetReplicas`), which the
    caller awaits from the interpreter pool: a script decides over the native rule, as in Karmada.
    `components` (`GetComponents`, under MultiplePodTemplatesScheduling) decide over both: the
    binding then has its components and neither replicas nor replicaRequirements, as Karmada's."""
    rt = registry.for_kind(template.api_version, template.kind)
    if rt.namespaced:
        binding: Binding = work_pb2.ResourceBinding(api_version=registry.BINDING_API, kind="ResourceBinding")
        binding.metadata.namespace = template.metadata.namespace
        binding.metadata.finalizers.append(BINDING_FINALIZER)
    else:
        binding = work_pb2.ClusterResourceBinding(api_version=registry.BINDING_API, kind="ClusterResourceBinding")
        binding.metadata.finalizers.append(CLUSTER_BINDING_FINALIZER)
    meta = template.metadata
    binding.metadata.name = keys.binding_name(meta.name, template.kind)
    _claim(binding.metadata, policy)
    if meta.uid:
        binding.metadata.owner_references.add(
            api_version=template.api_version, kind=template.kind, name=meta.name, uid=meta.uid,
            controller=True, block_owner_deletion=True,
        )
    spec, source = binding.spec, policy.spec
    spec.resource.CopyFrom(work_pb2.ObjectReference(
        api_version=template.api_version, kind=template.kind, namespace=meta.namespace, name=meta.name,
        uid=meta.uid, resource_version=meta.resource_version,
    ))
    spec.propagate_deps = source.propagate_deps
    spec.scheduler_name = source.scheduler_name or DEFAULT_SCHEDULER
    spec.placement.CopyFrom(source.placement)
    if source.HasField("failover"):
        spec.failover.CopyFrom(source.failover)
    spec.conflict_resolution = source.conflict_resolution
    if source.HasField("preserve_resources_on_deletion"):
        spec.preserve_resources_on_deletion = source.preserve_resources_on_deletion
    if source.HasField("suspension"):
        spec.suspension.dispatching = source.suspension.dispatching
        if source.suspension.HasField("dispatching_on_clusters"):
            spec.suspension.dispatching_on_clusters.CopyFrom(source.suspension.dispatching_on_clusters)
    if source.HasField("schedule_priority") and priority is not None:
        spec.schedule_priority.priority = priority
    if components is not None:
        spec.components.extend(components)
        return binding
    count, requirements = replicas if replicas is not None else replicas_and_requirements(template)
    spec.replicas = count
    if requirements is not None:
        spec.replica_requirements.CopyFrom(requirements)
    return binding


def _claim(meta: meta_pb2.ObjectMeta, policy: Policy) -> None:
    source = policy.metadata
    if isinstance(policy, policy_pb2.PropagationPolicy):
        label, annotations = PP_PERMANENT_ID_LABEL, {PP_NAMESPACE_ANNOTATION: source.namespace,
                                                     PP_NAME_ANNOTATION: source.name}
    else:
        label, annotations = CPP_PERMANENT_ID_LABEL, {CPP_NAME_ANNOTATION: source.name}
    if source.labels.get(label):
        meta.labels[label] = source.labels[label]
    meta.annotations.update(annotations)
