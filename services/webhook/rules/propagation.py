"""PropagationPolicy and ClusterPropagationPolicy admission: one code path over their shared spec.

The only differences: a PropagationPolicy's selectors are confined to (and
default to) its namespace, and the two kinds use different permanent-id labels.
"""

from __future__ import annotations

from collections.abc import Iterator

from flotilla.api.codec import FieldError
from flotilla.api.v1.policy_pb2 import ClusterPropagationPolicy, PropagationPolicy, PropagationSpec
from flotilla.api.wellknown import CPP_PERMANENT_ID_LABEL, PP_PERMANENT_ID_LABEL
from services.webhook.rules.failover import default_failover, validate_failover
from services.webhook.rules.fields import child, required, unsupported
from services.webhook.rules.permanent_id import default_permanent_id, validate_permanent_id
from services.webhook.rules.placement import default_placement, validate_placement
from services.webhook.rules.selectors import (
    default_selector_namespaces,
    selects_service_import,
    validate_resource_selectors,
)

Policy = PropagationPolicy | ClusterPropagationPolicy

DEFAULT_SCHEDULER_NAME = "default-scheduler"
CONFLICT_ABORT = "Abort"
CONFLICT_RESOLUTIONS = (CONFLICT_ABORT, "Overwrite")
PREEMPT_ALWAYS = "Always"
PREEMPT_NEVER = "Never"
PREEMPTIONS = (PREEMPT_ALWAYS, PREEMPT_NEVER)
ACTIVATION_PREFERENCES = ("Lazy",)
PRIORITY_CLASS_SOURCES = ("KubePriorityClass",)


def default_policy(policy: Policy, old: Policy | None, not_ready_seconds: int, unreachable_seconds: int) -> None:
    spec = policy.spec
    namespace = policy_namespace(policy)
    if namespace is not None:
        default_selector_namespaces(spec.resource_selectors, namespace)
    if selects_service_import(spec.resource_selectors):
        # A ServiceImport is useless without the EndpointSlices it brings along.
        spec.propagate_deps = True
    if not spec.scheduler_name:
        spec.scheduler_name = DEFAULT_SCHEDULER_NAME
    if not spec.conflict_resolution:
        spec.conflict_resolution = CONFLICT_ABORT
    if not spec.preemption:
        spec.preemption = PREEMPT_NEVER
    default_placement(spec.placement, not_ready_seconds, unreachable_seconds)
    default_failover(spec)
    default_permanent_id(policy.metadata, old.metadata if old is not None else None, permanent_id_label(policy))


def validate_policy(policy: Policy, old: Policy | None) -> Iterator[FieldError]:
    spec = policy.spec
    yield from validate_permanent_id(
        policy.metadata, old.metadata if old is not None else None, permanent_id_label(policy)
    )
    yield from validate_resource_selectors(
        spec.resource_selectors,
        policy_namespace(policy),
        names_required=spec.preemption == PREEMPT_ALWAYS,
        path="spec.resourceSelectors",
    )
    yield from validate_placement(spec.placement, "spec.placement")
    yield from _validate_enums(spec)
    yield from _validate_scheduler_name(spec, old.spec if old is not None else None)
    yield from validate_failover(spec, "spec")
    if spec.suspension.dispatching and spec.suspension.dispatching_on_clusters.cluster_names:
        yield FieldError(
            "spec.suspension.dispatchingOnClusters",
            "dispatchingOnClusters cannot co-exist with dispatching: true, which already suspends every cluster",
        )


def policy_namespace(policy: Policy) -> str | None:
    """The namespace a policy's selectors are confined to; None for a ClusterPropagationPolicy."""
    return policy.metadata.namespace if isinstance(policy, PropagationPolicy) else None


def permanent_id_label(policy: Policy) -> str:
    if isinstance(policy, PropagationPolicy):
        return PP_PERMANENT_ID_LABEL
    return CPP_PERMANENT_ID_LABEL


def _validate_enums(spec: PropagationSpec) -> Iterator[FieldError]:
    if spec.preemption not in PREEMPTIONS:
        yield unsupported("spec.preemption", spec.preemption, PREEMPTIONS)
    if spec.conflict_resolution not in CONFLICT_RESOLUTIONS:
        yield unsupported("spec.conflictResolution", spec.conflict_resolution, CONFLICT_RESOLUTIONS)
    if spec.activation_preference and spec.activation_preference not in ACTIVATION_PREFERENCES:
        yield unsupported("spec.activationPreference", spec.activation_preference, ACTIVATION_PREFERENCES)
    source = spec.schedule_priority.priority_class_source
    if spec.HasField("schedule_priority") and source not in PRIORITY_CLASS_SOURCES:
        yield unsupported("spec.schedulePriority.priorityClassSource", source, PRIORITY_CLASS_SOURCES)


def _validate_scheduler_name(spec: PropagationSpec, old_spec: PropagationSpec | None) -> Iterator[FieldError]:
    path = child("spec", "schedulerName")
    if not spec.scheduler_name:
        yield required(path)
    elif old_spec is not None and spec.scheduler_name != old_spec.scheduler_name:
        # Bindings copy the name; changing it would hand live bindings to a scheduler that never placed them.
        yield FieldError(path, "the schedulerName should not be updated")
