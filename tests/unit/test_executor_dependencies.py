"""What a workload depends on, and the attached bindings of its dependents."""

from __future__ import annotations

from typing import Any

import pytest

from flotilla.api import codec
from flotilla.api.v1 import work_pb2
from flotilla.api.wellknown import DEPENDED_BY_LABEL_PREFIX
from services.executor.dependencies import (
    Dependency,
    attach,
    attached_binding,
    binding_reference_key,
    depended_by,
    depended_by_label,
    dependencies,
    detach,
)

POD_SPEC: dict[str, Any] = {
    "serviceAccountName": "runner",
    "imagePullSecrets": [{"name": "registry"}],
    "volumes": [
        {"name": "a", "configMap": {"name": "cm-volume"}},
        {"name": "b", "secret": {"secretName": "secret-volume"}},
        {"name": "c", "projected": {"sources": [{"configMap": {"name": "cm-projected"}},
                                                {"secret": {"name": "secret-projected"}},
                                                {"serviceAccountToken": {"path": "token"}}]}},
        {"name": "d", "persistentVolumeClaim": {"claimName": "data"}},
        {"name": "e", "csi": {"driver": "x", "nodePublishSecretRef": {"name": "secret-csi"}}},
        {"name": "f", "cephfs": {"monitors": ["m"], "secretRef": {"name": "secret-ceph"}}},
        {"name": "g", "emptyDir": {}},
    ],
    "initContainers": [{"name": "init", "envFrom": [{"configMapRef": {"name": "cm-init"}}]}],
    "containers": [{
        "name": "app",
        "env": [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cm-env", "key": "a"}}},
                {"name": "B", "valueFrom": {"secretKeyRef": {"name": "secret-env", "key": "b"}}},
                {"name": "C", "value": "plain"},
                {"name": "D", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        "envFrom": [{"secretRef": {"name": "secret-env"}}, {"configMapRef": {"name": "cm-volume"}}],
    }],
}
EXPECTED = [
    *(Dependency("v1", "ConfigMap", "default", n) for n in ("cm-env", "cm-init", "cm-projected", "cm-volume")),
    *(Dependency("v1", "Secret", "default", n)
      for n in ("registry", "secret-ceph", "secret-csi", "secret-env", "secret-projected", "secret-volume")),
    Dependency("v1", "ServiceAccount", "default", "runner"),
    Dependency("v1", "PersistentVolumeClaim", "default", "data"),
]


def obj(api_version: str, kind: str, spec: dict[str, Any], name: str = "w") -> Any:
    return codec.from_dict({"apiVersion": api_version, "kind": kind,
                            "metadata": {"name": name, "namespace": "default"}, "spec": spec})


@pytest.mark.parametrize(("api_version", "kind", "spec"), [
    ("apps/v1", "Deployment", {"template": {"spec": POD_SPEC}}),
    ("apps/v1", "StatefulSet", {"template": {"spec": POD_SPEC}}),
    ("apps/v1", "ReplicaSet", {"template": {"spec": POD_SPEC}}),
    ("apps/v1", "DaemonSet", {"template": {"spec": POD_SPEC}}),
    ("batch/v1", "Job", {"template": {"spec": POD_SPEC}}),
    ("batch/v1", "CronJob", {"jobTemplate": {"spec": {"template": {"spec": POD_SPEC}}}}),
    ("v1", "Pod", POD_SPEC),
])
def test_every_workload_kind_finds_the_same_dependencies(api_version: str, kind: str, spec: dict[str, Any]) -> None:
    assert dependencies(obj(api_version, kind, spec)) == EXPECTED


@pytest.mark.parametrize(("api_version", "kind", "spec", "expected"), [
    ("v1", "ConfigMap", {}, []),
    ("apps/v1", "Deployment", {}, []),
    ("apps/v1", "Deployment", {"template": {"spec": {"serviceAccountName": "default"}}}, []),
    ("apps/v1", "Deployment", {"template": {"spec": {"volumes": "not-a-list", "containers": [None]}}}, []),
    ("networking.k8s.io/v1", "Ingress", {"tls": [{"secretName": "tls-b"}, {"secretName": "tls-a"}, {}]},
     [Dependency("v1", "Secret", "default", "tls-a"), Dependency("v1", "Secret", "default", "tls-b")]),
])
def test_dependencies_of_other_shapes(api_version: str, kind: str, spec: dict[str, Any],
                                      expected: list[Dependency]) -> None:
    assert dependencies(obj(api_version, kind, spec)) == expected


def workload_binding(name: str, clusters: list[tuple[str, int]]) -> work_pb2.ResourceBinding:
    binding = work_pb2.ResourceBinding(api_version="work.karmada.io/v1alpha2", kind="ResourceBinding")
    binding.metadata.name, binding.metadata.namespace = name, "default"
    binding.spec.conflict_resolution = "Overwrite"
    for cluster, replicas in clusters:
        binding.spec.clusters.add(name=cluster, replicas=replicas)
    return binding


def config_map() -> Any:
    cm = codec.from_dict({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"name": "conf", "namespace": "default"}, "data": {"k": "v"}})
    cm.metadata.uid, cm.metadata.resource_version = "cm-uid", "42"
    return cm


def test_depended_by_label_is_karmadas_shape() -> None:
    key, value = depended_by_label("default", "nginx-deployment")
    assert key == DEPENDED_BY_LABEL_PREFIX + binding_reference_key("default", "nginx-deployment")
    assert value == "default_nginx-deployment"
    assert len(key.split("/")[1]) <= 63
    assert binding_reference_key("default", "a") != binding_reference_key("default", "b")


def test_attached_binding_is_required_by_the_workload_and_owned_by_the_dependent() -> None:
    web = workload_binding("web-deployment", [("member1", 1), ("member2", 2)])
    attached = attached_binding(web, config_map(), "resourcebinding.karmada.io/permanent-id", "new-id")
    assert attached.metadata.name == "conf-configmap" and attached.metadata.namespace == "default"
    assert list(attached.metadata.finalizers) == ["karmada.io/binding-controller"]
    assert attached.metadata.labels["resourcebinding.karmada.io/permanent-id"] == "new-id"
    assert depended_by(attached) == [depended_by_label("default", "web-deployment")[0]]
    assert [(o.kind, o.name, o.uid) for o in attached.metadata.owner_references] == [("ConfigMap", "conf", "cm-uid")]
    assert (attached.spec.resource.kind, attached.spec.resource.name, attached.spec.resource.resource_version) == (
        "ConfigMap", "conf", "42")
    assert [(s.name, [(c.name, c.replicas) for c in s.clusters]) for s in attached.spec.required_by] == [
        ("web-deployment", [("member1", 1), ("member2", 2)])]
    assert attached.spec.conflict_resolution == "Overwrite"
    assert not attached.spec.clusters


def test_attach_updates_or_adds_the_snapshot_and_detach_removes_it() -> None:
    web = workload_binding("web-deployment", [("member1", 1)])
    api = workload_binding("api-deployment", [("member3", 2)])
    attached = attached_binding(web, config_map(), "resourcebinding.karmada.io/permanent-id", "id")
    attached.spec.clusters.add(name="member9", replicas=0)  # whatever else is there stays

    web.spec.clusters[0].name = "member2"
    both = attach(attach(attached, web, config_map()), api, config_map())
    assert [(s.name, [c.name for c in s.clusters]) for s in both.spec.required_by] == [
        ("web-deployment", ["member2"]), ("api-deployment", ["member3"])]
    assert sorted(depended_by(both)) == sorted([depended_by_label("default", "web-deployment")[0],
                                                depended_by_label("default", "api-deployment")[0]])
    assert [c.name for c in both.spec.clusters] == ["member9"]
    assert attach(both, api, config_map()) == both

    only_api = detach(both, "default", "web-deployment")
    assert [s.name for s in only_api.spec.required_by] == ["api-deployment"]
    assert depended_by(only_api) == [depended_by_label("default", "api-deployment")[0]]
    assert detach(only_api, "default", "web-deployment") == only_api
