"""Karmada's well-known names: finalizers, labels and annotations, spelled once.

They are part of the API a Karmada user already knows (`kubectl get rb -l
propagationpolicy.karmada.io/permanent-id=...` works the same here), so every
module takes them from this one place rather than restating the strings.
"""

from __future__ import annotations

# -- finalizers ---------------------------------------------------------------------------------
BINDING_FINALIZER = "karmada.io/binding-controller"
CLUSTER_BINDING_FINALIZER = "karmada.io/cluster-resource-binding-controller"
EXECUTION_FINALIZER = "karmada.io/execution-controller"
PP_FINALIZER = "karmada.io/propagation-policy-controller"
CPP_FINALIZER = "karmada.io/cluster-propagation-policy-controller"
CLUSTER_FINALIZER = "karmada.io/cluster-controller"

# -- labels -------------------------------------------------------------------------------------
PP_PERMANENT_ID_LABEL = "propagationpolicy.karmada.io/permanent-id"
CPP_PERMANENT_ID_LABEL = "clusterpropagationpolicy.karmada.io/permanent-id"
RB_PERMANENT_ID_LABEL = "resourcebinding.karmada.io/permanent-id"
CRB_PERMANENT_ID_LABEL = "clusterresourcebinding.karmada.io/permanent-id"
WORK_PERMANENT_ID_LABEL = "work.karmada.io/permanent-id"
# Prefix of the labels an attached (dependency) binding carries, one per binding it serves.
DEPENDED_BY_LABEL_PREFIX = "resourcebinding.karmada.io/depended-by-"
MANAGED_BY_LABEL = "binding.karmada.io/managed-by"
# On every member object the executor applies (Karmada's ManagedByKarmadaLabel, value "true").
MANAGED_LABEL = "karmada.io/managed"

# -- annotations --------------------------------------------------------------------------------
PP_NAME_ANNOTATION = "propagationpolicy.karmada.io/name"
PP_NAMESPACE_ANNOTATION = "propagationpolicy.karmada.io/namespace"
CPP_NAME_ANNOTATION = "clusterpropagationpolicy.karmada.io/name"
RB_NAME_ANNOTATION = "resourcebinding.karmada.io/name"
RB_NAMESPACE_ANNOTATION = "resourcebinding.karmada.io/namespace"
CRB_NAME_ANNOTATION = "clusterresourcebinding.karmada.io/name"
TEMPLATE_GENERATION_ANNOTATION = "resourcetemplate.karmada.io/generation"
MANAGED_LABELS_ANNOTATION = "resourcetemplate.karmada.io/managed-labels"
MANAGED_ANNOTATIONS_ANNOTATION = "resourcetemplate.karmada.io/managed-annotations"
CONFLICT_RESOLUTION_ANNOTATION = "work.karmada.io/conflict-resolution"
# On every member object the executor applies: the Work it came from.
WORK_NAME_ANNOTATION = "work.karmada.io/name"
WORK_NAMESPACE_ANNOTATION = "work.karmada.io/namespace"
APPLIED_PLACEMENT_ANNOTATION = "policy.karmada.io/applied-placement"
# Flotilla's own: the W3C trace context of the failover that last changed the object.
TRACEPARENT_ANNOTATION = "flotilla.io/traceparent"
# Flotilla's own: which user-added NoExecute taint (`key:effect@timeAdded`) opened the Cluster's trace.
TRACE_OPENED_FOR_ANNOTATION = "flotilla.io/trace-opened-for"

# Flotilla's own binding condition: its new Works wait for a Directly-purged Work to be deleted
# (set by the executor; the eviction service keeps the Directly task, and its state, meanwhile).
DIRECTLY_PURGE_PENDING_CONDITION = "DirectlyPurgePending"
# Flotilla's own binding condition: preserved labels (statePreservation) that are no valid label
# were left out of the new Works, which are applied without them (set by the executor; see
# flotilla/rules/preserved_labels.py).
STATE_PRESERVATION_FAILED_CONDITION = "StatePreservationFailed"

# The producer of the graceful eviction tasks application failover writes (Karmada's name).
APPLICATION_FAILOVER_PRODUCER = "ApplicationFailover"

# -- names --------------------------------------------------------------------------------------
DEFAULT_SCHEDULER = "default-scheduler"
EXECUTION_NAMESPACE_PREFIX = "karmada-es-"
CLUSTER_SECRET_NAMESPACE = "karmada-cluster"
