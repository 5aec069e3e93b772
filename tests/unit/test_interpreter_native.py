"""Karmada's native health rules (docs/karmada-rules.md §13), case by case, through HealthInterpreter."""

from __future__ import annotations

from typing import Any

import pytest

from flotilla.interpreter import HEALTHY, UNHEALTHY, UNKNOWN, HealthInterpreter, HealthResult, native_health_rule


def obj(api_version: str, kind: str, generation: int | None = None, spec: dict[str, Any] | None = None,
        status: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "x", "namespace": "default"}
    if generation is not None:
        meta["generation"] = generation
    built: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": meta}
    if spec is not None:
        built["spec"] = spec
    if status is not None:
        built["status"] = status
    return built


def workload(kind: str, replicas: int | None, **status: Any) -> dict[str, Any]:
    return obj("apps/v1", kind, 2, {} if replicas is None else {"replicas": replicas}, status)


def daemonset(**status: Any) -> dict[str, Any]:
    return obj("apps/v1", "DaemonSet", 2, {}, status)


def service(kind: str | None, *ingress: dict[str, Any]) -> dict[str, Any]:
    spec = {} if kind is None else {"type": kind}
    status = {"loadBalancer": {"ingress": list(ingress)}} if ingress else {"loadBalancer": {}}
    return obj("v1", "Service", spec=spec, status=status)


def ingress(*entries: dict[str, Any]) -> dict[str, Any]:
    return obj("networking.k8s.io/v1", "Ingress", spec={}, status={"loadBalancer": {"ingress": list(entries)}})


def pod(phase: str | None, *conditions: dict[str, Any]) -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": list(conditions)}
    if phase is not None:
        status["phase"] = phase
    return obj("v1", "Pod", spec={}, status=status)


def ready(value: str) -> dict[str, Any]:
    return {"type": "Ready", "status": value}


def rollout_cases(kind: str) -> list[tuple[str, dict[str, Any], str]]:
    full = {"observedGeneration": 2, "updatedReplicas": 3, "availableReplicas": 3, "readyReplicas": 3}
    return [
        (f"{kind}-rolled-out", workload(kind, 3, **full), HEALTHY),
        (f"{kind}-generation-not-observed", workload(kind, 3, **{**full, "observedGeneration": 1}), UNHEALTHY),
        (f"{kind}-not-all-updated", workload(kind, 3, **{**full, "updatedReplicas": 2}), UNHEALTHY),
        (f"{kind}-updated-not-available", workload(kind, 3, **{**full, "availableReplicas": 2}), UNHEALTHY),
        # Surge: more updated than desired is fine as long as they are available.
        (f"{kind}-surge", workload(kind, 3, **{**full, "updatedReplicas": 4, "availableReplicas": 4}), HEALTHY),
        (f"{kind}-no-spec-replicas", workload(kind, None, observedGeneration=2, updatedReplicas=1,
                                             availableReplicas=1), HEALTHY),
        (f"{kind}-missing-status", workload(kind, 3), UNHEALTHY),
        (f"{kind}-scaled-to-zero", workload(kind, 0, observedGeneration=2), HEALTHY),
        # Missing numbers are 0: generation 0 observed as 0, nothing desired.
        (f"{kind}-bare", obj("apps/v1", kind), HEALTHY),
    ]


CASES: list[tuple[str, dict[str, Any], str]] = [
    *rollout_cases("Deployment"),
    *rollout_cases("StatefulSet"),
    ("ReplicaSet-available", workload("ReplicaSet", 3, observedGeneration=2, availableReplicas=3), HEALTHY),
    ("ReplicaSet-short", workload("ReplicaSet", 3, observedGeneration=2, availableReplicas=2), UNHEALTHY),
    ("ReplicaSet-generation-not-observed",
     workload("ReplicaSet", 3, observedGeneration=1, availableReplicas=3), UNHEALTHY),
    ("ReplicaSet-missing-status", workload("ReplicaSet", 3), UNHEALTHY),
    ("ReplicaSet-no-spec-replicas", workload("ReplicaSet", None, observedGeneration=2), HEALTHY),
    ("DaemonSet-complete", daemonset(observedGeneration=2, desiredNumberScheduled=4, updatedNumberScheduled=4,
                                     numberAvailable=4), HEALTHY),
    ("DaemonSet-not-all-updated", daemonset(observedGeneration=2, desiredNumberScheduled=4,
                                            updatedNumberScheduled=3, numberAvailable=4), UNHEALTHY),
    ("DaemonSet-updated-not-available", daemonset(observedGeneration=2, desiredNumberScheduled=4,
                                                  updatedNumberScheduled=4, numberAvailable=3), UNHEALTHY),
    ("DaemonSet-generation-not-observed", daemonset(observedGeneration=1, desiredNumberScheduled=0), UNHEALTHY),
    ("DaemonSet-no-nodes", daemonset(observedGeneration=2), HEALTHY),
    ("Job-failed-has-no-rule", obj("batch/v1", "Job", spec={}, status={"failed": 6, "conditions": [
        {"type": "Failed", "status": "True"}]}), HEALTHY),
    ("Pod-running-ready", pod("Running", {"type": "PodScheduled", "status": "True"}, ready("True")), HEALTHY),
    ("Pod-running-not-ready", pod("Running", ready("False")), UNHEALTHY),
    ("Pod-running-no-conditions", pod("Running"), UNHEALTHY),
    ("Pod-succeeded", pod("Succeeded", ready("False")), HEALTHY),
    ("Pod-pending", pod("Pending", ready("True")), UNHEALTHY),
    ("Pod-failed", pod("Failed"), UNHEALTHY),
    ("Pod-missing-status", obj("v1", "Pod", spec={}), UNHEALTHY),
    ("Pod-first-ready-condition-counts", pod("Running", ready("False"), ready("True")), UNHEALTHY),
    ("Service-ClusterIP", service("ClusterIP"), HEALTHY),
    ("Service-default-type", service(None), HEALTHY),
    ("Service-NodePort", service("NodePort"), HEALTHY),
    ("Service-LoadBalancer-pending", service("LoadBalancer"), UNHEALTHY),
    ("Service-LoadBalancer-ip", service("LoadBalancer", {"ip": "10.0.0.7"}), HEALTHY),
    ("Service-LoadBalancer-hostname", service("LoadBalancer", {"hostname": "lb.example.com"}), HEALTHY),
    ("Service-LoadBalancer-empty-entry", service("LoadBalancer", {"ports": [{"port": 80}]}), UNHEALTHY),
    ("Service-LoadBalancer-second-entry", service("LoadBalancer", {}, {"ip": "10.0.0.8"}), HEALTHY),
    ("Service-LoadBalancer-no-status", obj("v1", "Service", spec={"type": "LoadBalancer"}), UNHEALTHY),
    ("Ingress-ip", ingress({"ip": "10.0.0.9"}), HEALTHY),
    ("Ingress-hostname", ingress({"hostname": "in.example.com"}), HEALTHY),
    ("Ingress-no-address", ingress(), UNHEALTHY),
    ("Ingress-empty-entries", ingress({}, {"ip": ""}), UNHEALTHY),
    ("PersistentVolumeClaim-bound", obj("v1", "PersistentVolumeClaim", spec={}, status={"phase": "Bound"}), HEALTHY),
    ("PersistentVolumeClaim-pending", obj("v1", "PersistentVolumeClaim", spec={}, status={"phase": "Pending"}),
     UNHEALTHY),
    ("PersistentVolumeClaim-lost", obj("v1", "PersistentVolumeClaim", status={"phase": "Lost"}), UNHEALTHY),
    ("PersistentVolumeClaim-missing-status", obj("v1", "PersistentVolumeClaim", spec={}), UNHEALTHY),
    ("PodDisruptionBudget-enough", obj("policy/v1", "PodDisruptionBudget",
                                       status={"currentHealthy": 3, "desiredHealthy": 2}), HEALTHY),
    ("PodDisruptionBudget-exact", obj("policy/v1", "PodDisruptionBudget",
                                      status={"currentHealthy": 2, "desiredHealthy": 2}), HEALTHY),
    ("PodDisruptionBudget-short", obj("policy/v1", "PodDisruptionBudget",
                                      status={"currentHealthy": 1, "desiredHealthy": 2}), UNHEALTHY),
    ("PodDisruptionBudget-missing-status", obj("policy/v1", "PodDisruptionBudget"), HEALTHY),
    ("ConfigMap-has-no-rule", obj("v1", "ConfigMap"), HEALTHY),
    ("CRD-has-no-rule", obj("example.io/v1", "Workload", status={"ready": False}), HEALTHY),
    # Rules are keyed by the exact apiVersion, as Karmada keys them by GVK.
    ("old-Ingress-has-no-rule", obj("extensions/v1beta1", "Ingress", status={"loadBalancer": {}}), HEALTHY),
    ("old-PodDisruptionBudget-has-no-rule", obj("policy/v1beta1", "PodDisruptionBudget",
                                               status={"currentHealthy": 0, "desiredHealthy": 2}), HEALTHY),
]


@pytest.mark.parametrize(("case", "member_object", "expected"), CASES, ids=[c[0] for c in CASES])
async def test_native_health(case: str, member_object: dict[str, Any], expected: str) -> None:
    result = await HealthInterpreter().interpret(member_object)
    assert (result.health, result.error) == (expected, "")


async def test_integral_float_counts_as_integer() -> None:
    # Some JSON decoders return 3.0; Kubernetes' converter accepts it as 3.
    deployment = workload("Deployment", 3, observedGeneration=2.0, updatedReplicas=3.0, availableReplicas=3)
    assert (await HealthInterpreter().interpret(deployment)).health == HEALTHY


WRONG_TYPES = [
    ("string-replicas", workload("Deployment", 3, observedGeneration=2, updatedReplicas="3"),
     "status.updatedReplicas: expected an integer, got a string"),
    ("bool-generation", obj("apps/v1", "ReplicaSet", True, {}, {}),
     "metadata.generation: expected an integer, got a boolean"),
    ("fractional", workload("Deployment", 3, observedGeneration=2, updatedReplicas=3, availableReplicas=2.5),
     "status.availableReplicas: expected an integer, got a number"),
    ("status-list", {**obj("v1", "Pod"), "status": []}, "status: expected an object, got a list"),
    ("condition-string", pod("Running", "Ready"), "status.conditions[0]: expected an object, got a string"),
    ("ingress-ip-number", service("LoadBalancer", {"ip": 7}),
     "status.loadBalancer.ingress[0].ip: expected a string, got a number"),
    ("phase-number", obj("v1", "PersistentVolumeClaim", status={"phase": 1}),
     "status.phase: expected a string, got a number"),
]


@pytest.mark.parametrize(("case", "member_object", "error"), WRONG_TYPES, ids=[c[0] for c in WRONG_TYPES])
async def test_field_of_wrong_type_is_unknown(case: str, member_object: dict[str, Any], error: str) -> None:
    # Karmada decodes into the typed object first; a decoding error is an
    # interpretation error, which reads as Unknown.
    assert await HealthInterpreter().interpret(member_object) == HealthResult(UNKNOWN, error)


async def test_null_fields_read_as_zero_values() -> None:
    deployment = obj("apps/v1", "Deployment", 2, {"replicas": None}, {"observedGeneration": 2,
                                                                    "updatedReplicas": None})
    assert (await HealthInterpreter().interpret(deployment)).health == HEALTHY
    assert (await HealthInterpreter().interpret({**obj("v1", "Pod"), "status": None})).health == UNHEALTHY


@pytest.mark.parametrize(
    ("api_version", "kind", "expected"),
    [
        ("apps/v1", "Deployment", True),
        ("apps/v1", "StatefulSet", True),
        ("apps/v1", "ReplicaSet", True),
        ("apps/v1", "DaemonSet", True),
        ("v1", "Pod", True),
        ("v1", "Service", True),
        ("networking.k8s.io/v1", "Ingress", True),
        ("v1", "PersistentVolumeClaim", True),
        ("policy/v1", "PodDisruptionBudget", True),
        ("batch/v1", "Job", False),
        ("v1", "ConfigMap", False),
        ("extensions/v1beta1", "Ingress", False),
    ],
)
def test_has_rule_for_native_kinds(api_version: str, kind: str, expected: bool) -> None:
    assert HealthInterpreter().has_rule(api_version, kind) is expected
    assert (native_health_rule(api_version, kind) is not None) is expected
