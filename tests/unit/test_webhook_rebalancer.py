"""Issue 36: WorkloadRebalancer admission (services/webhook/rules/rebalancer.py) as Karmada's CRD
schema has it, through validate_object: a Flotilla kind, no longer a template stored and ignored."""

from __future__ import annotations

from typing import Any

import pytest

from flotilla.api import codec, registry
from flotilla.api.v1.apps_pb2 import WorkloadRebalancer
from services.webhook.defaulting import AdmissionConfig
from services.webhook.validation import validate_object

NGINX = {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "nginx"}


def document(workloads: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer",
            "metadata": {"name": "demo"}, "spec": {"workloads": [NGINX] if workloads is None else workloads, **spec}}


def errors(doc: dict[str, Any]) -> list[tuple[str, str]]:
    obj = codec.from_dict(doc)
    assert isinstance(obj, WorkloadRebalancer)
    return [(e.path, e.reason) for e in validate_object(obj, None, AdmissionConfig())]


def test_a_workload_rebalancer_is_a_cluster_scoped_flotilla_kind() -> None:
    rt = registry.for_kind("apps.karmada.io/v1alpha1", "WorkloadRebalancer")
    assert rt is registry.WORKLOAD_REBALANCER and not rt.is_template and not rt.namespaced
    assert registry.lookup("workloadrebalancers") is rt


@pytest.mark.parametrize("doc", [
    document(),
    document(ttlSecondsAfterFinished=0),
    document([{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "name": "system:reader"},
              NGINX], ttlSecondsAfterFinished=60),
], ids=["one", "ttl-zero", "cluster-scoped"])
def test_karmadas_rebalancers_are_admitted(doc: dict[str, Any]) -> None:
    assert errors(doc) == []


@pytest.mark.parametrize(("doc", "path", "reason"), [
    (document([]), "spec.workloads", "must name at least one workload"),
    (document([{**NGINX, "apiVersion": ""}]), "spec.workloads[0].apiVersion", "required"),
    (document([{**NGINX, "kind": ""}]), "spec.workloads[0].kind", "required"),
    (document([{**NGINX, "name": ""}]), "spec.workloads[0].name", "required"),
    (document([{**NGINX, "kind": "Deploy ment"}]), "spec.workloads[0].kind", "invalid value"),
    (document([{**NGINX, "apiVersion": "Apps/v1"}]), "spec.workloads[0].apiVersion", "invalid value"),
    (document([{**NGINX, "namespace": "Not_A_Namespace"}]), "spec.workloads[0].namespace", "invalid value"),
    (document([{**NGINX, "name": "a/b"}]), "spec.workloads[0].name", "invalid value"),
    (document(ttlSecondsAfterFinished=-1), "spec.ttlSecondsAfterFinished", "invalid value -1"),
], ids=["no-workloads", "no-api-version", "no-kind", "no-name", "bad-kind", "bad-api-version", "bad-namespace",
        "bad-name", "negative-ttl"])
def test_what_karmadas_schema_refuses_is_refused_at_its_field(doc: dict[str, Any], path: str, reason: str) -> None:
    found = errors(doc)
    assert [p for p, _ in found] == [path], found
    assert found[0][1].startswith(reason), found
