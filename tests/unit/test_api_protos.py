"""The messages speak Karmada's field names and types."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from flotilla.api.v1 import (
    cluster_pb2,
    config_pb2,
    coordination_pb2,
    core_pb2,
    meta_pb2,
    policy_pb2,
    work_pb2,
)

MODULES = (meta_pb2, core_pb2, cluster_pb2, policy_pb2, work_pb2, config_pb2, coordination_pb2)


def _messages() -> Iterator[Descriptor]:
    seen: set[str] = set()

    def walk(descriptor: Descriptor) -> Iterator[Descriptor]:
        if descriptor.full_name in seen or descriptor.GetOptions().map_entry:
            return
        seen.add(descriptor.full_name)
        yield descriptor
        for nested in descriptor.nested_types:
            yield from walk(nested)

    for module in MODULES:
        for descriptor in module.DESCRIPTOR.message_types_by_name.values():
            yield from walk(descriptor)


def _fields() -> Iterator[FieldDescriptor]:
    for descriptor in _messages():
        yield from descriptor.fields


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


# Karmada spells these differently from the lowerCamelCase of the proto name.
EXPLICIT_JSON_NAMES = {
    "flotilla.v1.ClusterSpec.insecure_skip_tls_verification": "insecureSkipTLSVerification",
    "flotilla.v1.ClusterSpec.proxy_url": "proxyURL",
}


def test_json_names_are_camel_case_except_karmadas_acronyms() -> None:
    wrong = {
        fd.full_name: fd.json_name
        for fd in _fields()
        if fd.json_name != EXPLICIT_JSON_NAMES.get(fd.full_name, _camel(fd.name))
    }
    assert wrong == {}


# (message, Karmada YAML name) pairs that are easy to get wrong.
KARMADA_NAMES = [
    ("ClusterSpec", "insecureSkipTLSVerification"),
    ("ClusterSpec", "proxyURL"),
    ("ClusterSpec", "proxyHeader"),
    ("ClusterSpec", "apiEndpoint"),
    ("ClusterSpec", "impersonatorSecretRef"),
    ("ClusterSpec", "resourceModels"),
    ("ClusterStatus", "apiEnablements"),
    ("ClusterStatus", "kubernetesVersion"),
    ("ClusterStatus", "remedyActions"),
    ("APIEnablement", "groupVersion"),
    ("NodeSummary", "totalNum"),
    ("ResourceSummary", "allocatableModelings"),
    ("ObjectMeta", "resourceVersion"),
    ("ObjectMeta", "ownerReferences"),
    ("OwnerReference", "blockOwnerDeletion"),
    ("Condition", "lastTransitionTime"),
    ("Condition", "observedGeneration"),
    ("Taint", "timeAdded"),
    ("Toleration", "tolerationSeconds"),
    ("ClusterAffinity", "exclude"),
    ("ClusterAffinityTerm", "overflowAffinities"),
    ("FieldSelector", "matchExpressions"),
    ("ReplicaSchedulingStrategy", "replicaDivisionPreference"),
    ("ClusterPreferences", "staticWeightList"),
    ("ClusterPreferences", "dynamicWeight"),
    ("ApplicationFailoverBehavior", "blockPredecessorSeconds"),
    ("ApplicationFailoverBehavior", "preConditions"),
    ("StatePreservationRule", "aliasLabelName"),
    ("StatePreservationRule", "jsonPath"),
    ("Suspension", "dispatchingOnClusters"),
    ("PropagationSpec", "preserveResourcesOnDeletion"),
    ("ResourceBindingSpec", "gracefulEvictionTasks"),
    ("ResourceBindingSpec", "rescheduleTriggeredAt"),
    ("ResourceBindingSpec", "requiredBy"),
    ("GracefulEvictionTask", "preservedLabelState"),
    ("GracefulEvictionTask", "clustersBeforeFailover"),
    ("GracefulEvictionTask", "suppressDeletion"),
    ("ResourceBindingStatus", "schedulerObservingAffinityName"),
    ("ResourceBindingStatus", "schedulerObservedGeneration"),
    ("AggregatedStatusItem", "appliedMessage"),
    ("WorkStatus", "manifestStatuses"),
    ("ClusterTaintPolicySpec", "addOnConditions"),
    ("ClusterTaintPolicySpec", "removeOnConditions"),
    ("MatchCondition", "statusValues"),
    ("CustomizationRules", "healthInterpretation"),
    ("CustomizationRules", "dependencyInterpretation"),
    ("LuaScript", "luaScript"),
    ("LeaseSpec", "holderIdentity"),
    ("LeaseSpec", "leaseDurationSeconds"),
    ("Event", "involvedObject"),
    ("Event", "reportingComponent"),
    ("Unstructured", "apiVersion"),
]


@pytest.mark.parametrize(("message", "json_name"), KARMADA_NAMES)
def test_karmada_field_name_exists(message: str, json_name: str) -> None:
    descriptor = next(d for d in _messages() if d.name == message)
    assert json_name in {fd.json_name for fd in descriptor.fields}


def test_no_struct_anywhere() -> None:
    types = {fd.message_type.full_name for fd in _fields() if fd.type == FieldDescriptor.TYPE_MESSAGE}
    assert not {t for t in types if t.startswith("google.protobuf.") and t != "google.protobuf.Timestamp"}


def test_bytes_fields_are_the_embedded_objects() -> None:
    assert {fd.full_name for fd in _fields() if fd.type == FieldDescriptor.TYPE_BYTES} == {
        "flotilla.v1.Unstructured.content",
        "flotilla.v1.WorkloadTemplate.manifests",
        "flotilla.v1.AggregatedStatusItem.status",
        "flotilla.v1.ManifestStatus.status",
        # Karmada's apiextensionsv1.JSON: any JSON value an override writes.
        "flotilla.v1.PlaintextOverrider.value",
        "flotilla.v1.PatchOperation.value",
    }


def test_pointer_fields_are_optional() -> None:
    optional = {
        fd.full_name
        for fd in _fields()
        if fd.has_presence and fd.type != FieldDescriptor.TYPE_MESSAGE and not fd.is_repeated
    }
    assert optional == {
        "flotilla.v1.OwnerReference.controller",
        "flotilla.v1.OwnerReference.block_owner_deletion",
        "flotilla.v1.Toleration.toleration_seconds",
        "flotilla.v1.PropagationSpec.priority",
        "flotilla.v1.PropagationSpec.preserve_resources_on_deletion",
        "flotilla.v1.ApplicationFailoverBehavior.grace_period_seconds",
        "flotilla.v1.ApplicationFailoverBehavior.block_predecessor_seconds",
        "flotilla.v1.PreConditions.delay_seconds",
        "flotilla.v1.DecisionConditions.toleration_seconds",
        "flotilla.v1.Failback.enabled",
        "flotilla.v1.Failback.stabilization_window_seconds",
        "flotilla.v1.Failback.max_concurrent",
        "flotilla.v1.Suspension.dispatching",
        "flotilla.v1.ResourceBindingSpec.preserve_resources_on_deletion",
        "flotilla.v1.GracefulEvictionTask.replicas",
        "flotilla.v1.GracefulEvictionTask.grace_period_seconds",
        "flotilla.v1.GracefulEvictionTask.suppress_deletion",
        "flotilla.v1.BindingSuspension.dispatching",
        "flotilla.v1.BindingSuspension.scheduling",
        "flotilla.v1.WorkSpec.suspend_dispatching",
        "flotilla.v1.WorkSpec.preserve_resources_on_deletion",
        "flotilla.v1.LeaseSpec.holder_identity",
        "flotilla.v1.LeaseSpec.lease_duration_seconds",
        "flotilla.v1.LeaseSpec.lease_transitions",
        "flotilla.v1.LeaseSpec.strategy",
        "flotilla.v1.LeaseSpec.preferred_holder",
    }


@pytest.mark.parametrize(
    ("field", "proto_type"),
    [
        ("flotilla.v1.ObjectMeta.generation", FieldDescriptor.TYPE_INT64),
        ("flotilla.v1.Condition.observed_generation", FieldDescriptor.TYPE_INT64),
        ("flotilla.v1.Toleration.toleration_seconds", FieldDescriptor.TYPE_INT64),
        ("flotilla.v1.StaticClusterWeight.weight", FieldDescriptor.TYPE_INT64),
        ("flotilla.v1.ResourceBindingStatus.scheduler_observed_generation", FieldDescriptor.TYPE_INT64),
        ("flotilla.v1.SpreadConstraint.max_groups", FieldDescriptor.TYPE_INT32),
        ("flotilla.v1.SpreadConstraint.min_groups", FieldDescriptor.TYPE_INT32),
        ("flotilla.v1.ResourceBindingSpec.replicas", FieldDescriptor.TYPE_INT32),
        ("flotilla.v1.GracefulEvictionTask.grace_period_seconds", FieldDescriptor.TYPE_INT32),
        ("flotilla.v1.DecisionConditions.toleration_seconds", FieldDescriptor.TYPE_INT32),
        ("flotilla.v1.NodeSummary.total_num", FieldDescriptor.TYPE_INT32),
    ],
)
def test_integer_widths_follow_karmada(field: str, proto_type: int) -> None:
    message, _, name = field.rpartition(".")
    descriptor = next(d for d in _messages() if d.full_name == message)
    assert descriptor.fields_by_name[name].type == proto_type


def test_top_level_objects_have_type_and_object_meta() -> None:
    tops = [
        cluster_pb2.Cluster,
        policy_pb2.PropagationPolicy,
        policy_pb2.ClusterPropagationPolicy,
        policy_pb2.ClusterTaintPolicy,
        work_pb2.ResourceBinding,
        work_pb2.ClusterResourceBinding,
        work_pb2.Work,
        config_pb2.ResourceInterpreterCustomization,
        coordination_pb2.Lease,
        core_pb2.Event,
        meta_pb2.Unstructured,
    ]
    for cls in tops:
        fields = cls.DESCRIPTOR.fields_by_name
        assert [f.name for f in cls.DESCRIPTOR.fields][:3] == ["api_version", "kind", "metadata"], cls
        assert fields["metadata"].message_type is meta_pb2.ObjectMeta.DESCRIPTOR


def test_object_meta_field_numbers() -> None:
    numbers = {fd.name: fd.number for fd in meta_pb2.ObjectMeta.DESCRIPTOR.fields}
    assert numbers == {
        "name": 1,
        "namespace": 2,
        "uid": 3,
        "generation": 4,
        "resource_version": 5,
        "creation_timestamp": 6,
        "deletion_timestamp": 7,
        "finalizers": 8,
        "labels": 9,
        "annotations": 10,
        "owner_references": 11,
    }


def test_no_services_in_the_object_protos() -> None:
    assert all(not module.DESCRIPTOR.services_by_name for module in MODULES)
