"""Template + policy -> binding (flotilla.rules.binding_builder), as Karmada's detector builds it."""

from __future__ import annotations

from typing import Any

import pytest

from flotilla.api import codec
from flotilla.api.v1 import meta_pb2, policy_pb2, work_pb2
from flotilla.rules.binding_builder import (
    build_binding,
    replicas_and_requirements,
    resource_request,
)
from flotilla.rules.resource_selection import selects


def template(kind: str, spec: dict[str, Any] | None = None, api_version: str = "apps/v1",
             namespace: str = "default", labels: dict[str, str] | None = None) -> meta_pb2.Unstructured:
    data: dict[str, Any] = {"apiVersion": api_version, "kind": kind,
                            "metadata": {"name": "web", "labels": labels or {}}}
    if namespace:
        data["metadata"]["namespace"] = namespace
    if spec is not None:
        data["spec"] = spec
    obj = codec.from_dict(data)
    assert isinstance(obj, meta_pb2.Unstructured)
    return obj


def pod(*containers: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"containers": list(containers), **extra}


def container(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return {"name": "c", "image": "nginx", "resources": resources}


@pytest.mark.parametrize(("spec", "expected"), [
    (pod(container({"cpu": "100m", "memory": "128Mi"})), {"cpu": "100m", "memory": "128Mi"}),
    (pod(container({"cpu": "100m"}), container({"cpu": "250m", "memory": "1Gi"})), {"cpu": "350m", "memory": "1Gi"}),
    # Limits stand in for missing requests.
    (pod(container(limits={"cpu": "1", "memory": "512Mi"})), {"cpu": "1", "memory": "512Mi"}),
    (pod(container({"cpu": "200m"}, {"cpu": "1", "memory": "256Mi"})), {"cpu": "200m", "memory": "256Mi"}),
    # An init container asking more raises the request; overhead adds on top.
    (pod(container({"cpu": "100m"}), initContainers=[container({"cpu": "2"})], overhead={"cpu": "50m"}),
     {"cpu": "2050m"}),
    (pod(container()), {}),
])
def test_resource_request(spec: dict[str, Any], expected: dict[str, str]) -> None:
    assert resource_request(spec) == expected


@pytest.mark.parametrize(("kind", "api_version", "spec", "replicas"), [
    ("Deployment", "apps/v1", {"replicas": 3, "template": {"spec": pod(container())}}, 3),
    ("Deployment", "apps/v1", {"template": {"spec": pod(container())}}, 1),
    ("StatefulSet", "apps/v1", {"replicas": 2, "template": {"spec": pod(container())}}, 2),
    ("ReplicaSet", "apps/v1", {"replicas": 0, "template": {"spec": pod(container())}}, 0),
    ("Job", "batch/v1", {"parallelism": 4, "completions": 2, "template": {"spec": pod(container())}}, 2),
    ("Job", "batch/v1", {"parallelism": 4, "template": {"spec": pod(container())}}, 4),
    ("Pod", "v1", pod(container()), 1),
])
def test_workload_replicas(kind: str, api_version: str, spec: dict[str, Any], replicas: int) -> None:
    count, requirements = replicas_and_requirements(template(kind, spec, api_version))
    assert count == replicas
    assert requirements is not None


def test_non_workloads_have_no_replicas() -> None:
    assert replicas_and_requirements(template("ConfigMap", None, "v1")) == (0, None)
    assert replicas_and_requirements(template("FlinkDeployment", {"job": {"parallelism": 2}},
                                              "flink.apache.org/v1beta1")) == (0, None)


def test_node_claim() -> None:
    spec = {"replicas": 1, "template": {"spec": pod(
        container({"cpu": "1"}),
        nodeSelector={"disk": "ssd"},
        tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
        affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}},
    )}}
    _, requirements = replicas_and_requirements(template("Deployment", spec))
    assert requirements is not None
    claim = requirements.node_claim
    assert dict(claim.node_selector) == {"disk": "ssd"}
    assert claim.tolerations[0].key == "gpu"
    assert claim.hard_node_affinity.node_selector_terms[0].match_expressions[0].values == ["a"]
    _, plain = replicas_and_requirements(template("Deployment", {"template": {"spec": pod(container())}}))
    assert plain is not None and not plain.HasField("node_claim")


def policy(kind: str = "PropagationPolicy", selector: dict[str, Any] | None = None,
           spec: dict[str, Any] | None = None) -> Any:
    metadata: dict[str, Any] = {"name": "web", "labels": {}}
    if kind == "PropagationPolicy":
        metadata["namespace"] = "default"
        metadata["labels"]["propagationpolicy.karmada.io/permanent-id"] = "pp-id"
    else:
        metadata["labels"]["clusterpropagationpolicy.karmada.io/permanent-id"] = "cpp-id"
    return codec.from_dict({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": kind, "metadata": metadata,
        "spec": {"resourceSelectors": [selector or {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}],
                 **(spec or {})},
    })


@pytest.mark.parametrize(("selector", "labels", "expected"), [
    ({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, {}, True),
    ({"apiVersion": "apps/v1", "kind": "Deployment", "name": "other"}, {}, False),
    ({"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web"}, {}, False),
    ({"apiVersion": "apps/v1", "kind": "Deployment"}, {}, True),
    ({"apiVersion": "apps/v1", "kind": "Deployment", "labelSelector": {"matchLabels": {"app": "web"}}},
     {"app": "web"}, True),
    ({"apiVersion": "apps/v1", "kind": "Deployment", "labelSelector": {"matchLabels": {"app": "web"}}}, {}, False),
    ({"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "other"}, {}, False),
])
def test_selects(selector: dict[str, Any], labels: dict[str, str], expected: bool) -> None:
    deployment = template("Deployment", {"replicas": 1}, labels=labels)
    assert selects(policy(selector=selector), deployment) is expected


def test_a_propagation_policy_only_selects_its_namespace() -> None:
    assert not selects(policy(), template("Deployment", {"replicas": 1}, namespace="elsewhere"))


def test_build_resource_binding() -> None:
    deployment = template("Deployment", {"replicas": 3, "template": {"spec": pod(container({"cpu": "100m"}))}})
    deployment.metadata.uid = "uid-1"
    deployment.metadata.resource_version = "42"
    failover = {"application": {"decisionConditions": {"tolerationSeconds": 60}, "purgeMode": "Gracefully"}}
    binding = build_binding(deployment, policy(spec={
        "placement": {"clusterAffinity": {"clusterNames": ["m1"]}}, "failover": failover,
        "propagateDeps": True, "conflictResolution": "Overwrite", "preserveResourcesOnDeletion": True,
        "suspension": {"dispatching": True}}))
    assert isinstance(binding, work_pb2.ResourceBinding)
    assert codec.to_dict(binding) == {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {
            "name": "web-deployment", "namespace": "default",
            "finalizers": ["karmada.io/binding-controller"],
            "labels": {"propagationpolicy.karmada.io/permanent-id": "pp-id"},
            "annotations": {"propagationpolicy.karmada.io/name": "web",
                            "propagationpolicy.karmada.io/namespace": "default"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "uid-1",
                                 "controller": True, "blockOwnerDeletion": True}],
        },
        "spec": {
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "web",
                         "uid": "uid-1", "resourceVersion": "42"},
            "propagateDeps": True,
            "replicaRequirements": {"resourceRequest": {"cpu": "100m"}},
            "replicas": 3,
            "placement": {"clusterAffinity": {"clusterNames": ["m1"]}},
            "schedulerName": "default-scheduler",
            "failover": failover,
            "conflictResolution": "Overwrite",
            "suspension": {"dispatching": True},
            "preserveResourcesOnDeletion": True,
        },
    }


def test_cluster_scoped_template_gets_a_cluster_resource_binding() -> None:
    namespace = template("Namespace", None, "v1", namespace="")
    cpp = policy("ClusterPropagationPolicy", {"apiVersion": "v1", "kind": "Namespace", "name": "web"})
    binding = build_binding(namespace, cpp)
    assert isinstance(binding, work_pb2.ClusterResourceBinding)
    assert binding.metadata.name == "web-namespace" and not binding.metadata.namespace
    assert list(binding.metadata.finalizers) == ["karmada.io/cluster-resource-binding-controller"]
    assert dict(binding.metadata.labels) == {"clusterpropagationpolicy.karmada.io/permanent-id": "cpp-id"}
    assert dict(binding.metadata.annotations) == {"clusterpropagationpolicy.karmada.io/name": "web"}
    assert binding.spec.replicas == 0 and not binding.spec.HasField("replica_requirements")


def test_a_cluster_policy_claims_namespaced_templates_into_resource_bindings() -> None:
    cpp = policy("ClusterPropagationPolicy")
    assert isinstance(cpp, policy_pb2.ClusterPropagationPolicy)
    assert isinstance(build_binding(template("Deployment", {"replicas": 1}), cpp), work_pb2.ResourceBinding)
