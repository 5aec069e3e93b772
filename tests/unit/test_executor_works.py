"""Binding -> Works: expected clusters, orphans, the Directly wait, replica revision, Job
completions, preserved-label injection and the manifest itself."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flotilla.api import codec, keys
from flotilla.api.v1 import work_pb2
from flotilla.rules import aggregated_status
from flotilla.rules.apportionment import webster
from services.executor import works

ODD_UID = "d43fdeeb-d750-4e2b-bee3-64eb94534f4c"
EVEN_UID = "4858ca61-3ff8-4095-8267-f3d059d8074c"


def spec(clusters: list[tuple[str, int]] = (), tasks: list[dict[str, Any]] = (),
         required_by: list[list[tuple[str, int]]] = ()) -> work_pb2.ResourceBindingSpec:
    result = work_pb2.ResourceBindingSpec()
    for name, replicas in clusters:
        result.clusters.add(name=name, replicas=replicas)
    for task in tasks:
        result.graceful_eviction_tasks.add(**task)
    for i, snapshot in enumerate(required_by):
        result.required_by.add(namespace="default", name=f"w{i}",
                               clusters=[work_pb2.TargetCluster(name=n, replicas=r) for n, r in snapshot])
    return result


def work(cluster: str, deleting: bool = False, namespace: str = "") -> work_pb2.Work:
    w = work_pb2.Work()
    w.metadata.name = "nginx-687f7fb96f"
    w.metadata.namespace = namespace or f"karmada-es-{cluster}"
    if deleting:
        w.metadata.deletion_timestamp.FromSeconds(1)
    return w


@pytest.mark.parametrize(("binding_spec", "expected"), [
    (spec([("m1", 1), ("m2", 2)]), {"m1", "m2"}),
    (spec([("m2", 3)], tasks=[{"from_cluster": "m1", "purge_mode": "Gracefully"}]), {"m1", "m2"}),
    (spec([("m2", 3)], tasks=[{"from_cluster": "m1", "purge_mode": "Never"}]), {"m1", "m2"}),
    (spec([("m2", 3)], tasks=[{"from_cluster": "m1"}]), {"m1", "m2"}),
    (spec([("m2", 3)], tasks=[{"from_cluster": "m1", "purge_mode": "Directly"}]), {"m2"}),
    (spec([("m2", 3)], tasks=[{"from_cluster": "m1", "purge_mode": "Immediately"}]), {"m2"}),
    (spec([("m1", 1)], required_by=[[("m2", 2)], [("m1", 5), ("m3", 1)]]), {"m1", "m2", "m3"}),
    (spec(), set()),
])
def test_expected_clusters(binding_spec: work_pb2.ResourceBindingSpec, expected: set[str]) -> None:
    assert aggregated_status.expected_clusters(binding_spec) == expected


def test_target_clusters_add_required_by_clusters_not_scheduled() -> None:
    assert aggregated_status.target_clusters(spec([("m1", 1)], required_by=[[("m2", 2), ("m1", 7)], [("m3", 0)]])) == [
        ("m1", 1), ("m2", 2), ("m3", 0)]


def test_orphans_are_works_of_unexpected_clusters_not_yet_deleting() -> None:
    found = [work("m1"), work("m2"), work("m3", deleting=True), work("m4"), work("", namespace="default")]
    assert [w.metadata.namespace for w in works.orphan_works(found, {"m1"})] == ["karmada-es-m2", "karmada-es-m4"]


@pytest.mark.parametrize(("tasks", "found", "blocking"), [
    ([{"from_cluster": "m1", "purge_mode": "Directly"}], [work("m1"), work("m2")], ["m1"]),
    ([{"from_cluster": "m1", "purge_mode": "Directly"}], [work("m1", deleting=True)], ["m1"]),
    ([{"from_cluster": "m1", "purge_mode": "Directly"}], [work("m2")], []),
    ([{"from_cluster": "m1", "purge_mode": "Gracefully"}], [work("m1")], []),
    ([{"from_cluster": "m1", "purge_mode": "Immediately"}, {"from_cluster": "m3", "purge_mode": "Directly"}],
     [work("m3"), work("m1")], ["m1", "m3"]),
])
def test_directly_blocking(tasks: list[dict[str, Any]], found: list[work_pb2.Work], blocking: list[str]) -> None:
    assert works.directly_blocking(spec([("m2", 3)], tasks=tasks), found) == blocking


DIRECTLY_TASK = {"from_cluster": "m1", "purge_mode": "Directly", "preserved_label_state": {"jobid": "abc"},
                 "clusters_before_failover": ["m1"]}


@pytest.mark.parametrize(("binding_spec", "cluster", "labels"), [
    (spec([("m2", 1)], tasks=[DIRECTLY_TASK]), "m2", {"jobid": "abc"}),
    (spec([("m2", 1)], tasks=[{**DIRECTLY_TASK, "purge_mode": "Immediately"}]), "m2", {"jobid": "abc"}),
    (spec([("m2", 1)], tasks=[{**DIRECTLY_TASK, "purge_mode": "Gracefully"}]), "m2", {}),
    # Only the last task counts.
    (spec([("m2", 1)], tasks=[DIRECTLY_TASK, {"from_cluster": "m3", "purge_mode": "Gracefully"}]), "m2", {}),
    # Not onto a cluster the workload was on before the failover.
    (spec([("m1", 1)], tasks=[DIRECTLY_TASK]), "m1", {}),
    # Only with exactly one target cluster.
    (spec([("m2", 1), ("m3", 1)], tasks=[DIRECTLY_TASK]), "m2", {}),
    (spec([("m2", 1)], tasks=[DIRECTLY_TASK], required_by=[[("m3", 1)]]), "m2", {}),
    (spec([("m2", 1)]), "m2", {}),
])
def test_injected_labels(binding_spec: work_pb2.ResourceBindingSpec, cluster: str, labels: dict[str, str]) -> None:
    assert works.injected_labels(binding_spec, cluster) == labels


@pytest.mark.parametrize(("seats", "votes", "uid", "expected"), [
    (12, {"a": 3, "b": 2, "c": 1}, "", {"a": 6, "b": 4, "c": 2}),
    (3, {"a": 1, "b": 2}, "", {"a": 1, "b": 2}),
    (5, {"a": 1, "b": 1, "c": 1}, "", {"a": 2, "b": 2, "c": 1}),
    (5, {"a": 1, "b": 1, "c": 1}, EVEN_UID, {"a": 2, "b": 2, "c": 1}),
    (5, {"a": 1, "b": 1, "c": 1}, ODD_UID, {"a": 1, "b": 2, "c": 2}),
    (0, {"a": 1}, "", {"a": 0}),
    (4, {}, "", {}),
])
def test_webster(seats: int, votes: dict[str, int], uid: str, expected: dict[str, int]) -> None:
    assert dict(webster(seats, votes, uid=uid)) == expected


def template(api_version: str, kind: str, spec_: dict[str, Any], **extra: Any) -> Any:
    t = codec.from_dict({
        "apiVersion": api_version, "kind": kind,
        "metadata": {"name": "nginx", "namespace": "default", "labels": {"app": "nginx"},
                     "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "team": "a",
                                     "flotilla.io/traceparent": "00-x"},
                     "finalizers": ["user/finalizer"],
                     "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "o", "uid": "1"}]},
        "spec": spec_, "status": {"replicas": 9}, **extra})
    t.metadata.uid, t.metadata.resource_version, t.metadata.generation = EVEN_UID, "77", 4
    t.metadata.creation_timestamp.FromSeconds(100)
    return t


def binding(binding_spec: work_pb2.ResourceBindingSpec, divided: bool = False) -> work_pb2.ResourceBinding:
    b = work_pb2.ResourceBinding(api_version="work.karmada.io/v1alpha2", kind="ResourceBinding")
    b.metadata.name, b.metadata.namespace = "nginx-deployment", "default"
    b.metadata.labels["resourcebinding.karmada.io/permanent-id"] = "bid"
    b.spec.CopyFrom(binding_spec)
    if divided:
        b.spec.placement.replica_scheduling.replica_scheduling_type = "Divided"
    return b


def manifests(result: list[work_pb2.Work]) -> dict[str, dict[str, Any]]:
    return {works.work_cluster(w): json.loads(w.spec.workload.manifests[0]) for w in result}


@pytest.mark.parametrize(("api_version", "kind", "field"), [
    ("apps/v1", "Deployment", "replicas"),
    ("apps/v1", "StatefulSet", "replicas"),
    ("apps/v1", "ReplicaSet", "replicas"),
    ("batch/v1", "Job", "parallelism"),
])
def test_replicas_revised_to_each_clusters_share(api_version: str, kind: str, field: str) -> None:
    t = template(api_version, kind, {field: 3})
    result = manifests(works.build_works(binding(spec([("m1", 1), ("m2", 2)])), t, False))
    assert {c: m["spec"][field] for c, m in result.items()} == {"m1": 1, "m2": 2}


def test_replicas_left_alone_for_other_kinds_and_before_any_cluster_has_replicas() -> None:
    other = template("apps/v1", "DaemonSet", {"replicas": 3})
    assert manifests(works.build_works(binding(spec([("m1", 1)])), other, False))["m1"]["spec"]["replicas"] == 3
    deployment = template("apps/v1", "Deployment", {"replicas": 3})
    unscheduled = manifests(works.build_works(binding(spec([("m1", 0), ("m2", 0)])), deployment, False))
    assert {c: m["spec"]["replicas"] for c, m in unscheduled.items()} == {"m1": 3, "m2": 3}


@pytest.mark.parametrize(("divided", "expected"), [
    (True, {"m1": {"parallelism": 1, "completions": 3}, "m2": {"parallelism": 2, "completions": 7}}),
    (False, {"m1": {"parallelism": 1, "completions": 10}, "m2": {"parallelism": 2, "completions": 10}}),
])
def test_job_completions_split_with_webster_when_divided(divided: bool, expected: dict[str, dict[str, int]]) -> None:
    t = template("batch/v1", "Job", {"parallelism": 3, "completions": 10})
    result = manifests(works.build_works(binding(spec([("m1", 1), ("m2", 2)]), divided), t, False))
    assert {c: {k: m["spec"][k] for k in ("parallelism", "completions")} for c, m in result.items()} == expected


def test_manifest_is_the_template_cleaned_and_marked() -> None:
    t = template("apps/v1", "Deployment", {"replicas": 3}, data={"x": 1})
    t.metadata.annotations["work.karmada.io/conflict-resolution"] = "overwrite"
    (w,) = works.build_works(binding(spec([("m1", 3)])), t, False)
    body = json.loads(w.spec.workload.manifests[0])
    assert body == {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {
            "name": "nginx", "namespace": "default",
            "labels": {"app": "nginx", "resourcebinding.karmada.io/permanent-id": "bid"},
            "annotations": {"resourcebinding.karmada.io/name": "nginx-deployment",
                            "resourcebinding.karmada.io/namespace": "default",
                            "resourcetemplate.karmada.io/generation": "4", "team": "a",
                            "work.karmada.io/conflict-resolution": "overwrite"},
        },
        "spec": {"replicas": 3}, "data": {"x": 1},
    }


def test_work_metadata_and_spec() -> None:
    b = binding(spec([("m1", 3), ("m2", 0)]))
    b.spec.conflict_resolution = "Overwrite"
    b.spec.preserve_resources_on_deletion = True
    b.spec.suspension.dispatching_on_clusters.cluster_names.append("m2")
    m1, m2 = works.build_works(b, template("v1", "ConfigMap", {}), False)
    assert (m1.metadata.namespace, m1.metadata.name) == ("karmada-es-m1", keys.work_name("default", "nginx",
                                                                                         "ConfigMap"))
    assert list(m1.metadata.finalizers) == ["karmada.io/execution-controller"]
    assert dict(m1.metadata.labels) == {"resourcebinding.karmada.io/permanent-id": "bid"}
    assert dict(m1.metadata.annotations) == {"resourcebinding.karmada.io/name": "nginx-deployment",
                                             "resourcebinding.karmada.io/namespace": "default",
                                             "resourcetemplate.karmada.io/generation": "4"}
    assert (m1.spec.suspend_dispatching, m2.spec.suspend_dispatching) == (False, True)
    assert m1.spec.preserve_resources_on_deletion
    assert json.loads(m1.spec.workload.manifests[0])["metadata"]["annotations"][
        "work.karmada.io/conflict-resolution"] == "overwrite"


def test_cluster_binding_works_point_at_it_by_name() -> None:
    crb = work_pb2.ClusterResourceBinding(api_version="work.karmada.io/v1alpha2", kind="ClusterResourceBinding")
    crb.metadata.name = "reader-clusterrole"
    crb.metadata.labels["clusterresourcebinding.karmada.io/permanent-id"] = "cid"
    crb.spec.clusters.add(name="m1")
    role = codec.from_dict({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                            "metadata": {"name": "system:reader"}})
    (w,) = works.build_works(crb, role, False)
    assert w.metadata.name.startswith("system.reader-")
    assert dict(w.metadata.annotations) == {"clusterresourcebinding.karmada.io/name": "reader-clusterrole",
                                            "resourcetemplate.karmada.io/generation": "0"}
    assert works.work_binding_ids(w) == ["cid"]
    assert "namespace" not in json.loads(w.spec.workload.manifests[0])["metadata"]


@pytest.mark.parametrize(("gate", "labelled"), [(True, True), (False, False)])
def test_preserved_labels_injected_only_with_the_gate(gate: bool, labelled: bool) -> None:
    b = binding(spec([("m2", 1)], tasks=[DIRECTLY_TASK]))
    (w,) = works.build_works(b, template("apps/v1", "StatefulSet", {"replicas": 1}), gate)
    assert ("jobid" in json.loads(w.spec.workload.manifests[0])["metadata"]["labels"]) is labelled


def _desired() -> work_pb2.Work:
    return works.build_works(binding(spec([("m1", 2)])), template("apps/v1", "Deployment", {"replicas": 3}),
                             False)[0]


def _with_others(work: work_pb2.Work) -> work_pb2.Work:
    """The Work as stored: what others add to it besides what the binding controller wrote."""
    current = work_pb2.Work()
    current.CopyFrom(work)
    current.metadata.labels["work.karmada.io/permanent-id"] = "wid"
    current.metadata.annotations["flotilla.io/traceparent"] = "00-abc"
    current.metadata.finalizers.append("other/finalizer")
    current.status.conditions.add(type="Applied", status="True")
    return current


def test_merge_work_keeps_what_others_wrote() -> None:
    desired = _desired()
    current = _with_others(desired)
    assert works.merge_work(current, desired) == current
    current.spec.workload.manifests[0] = b"{}"
    current.metadata.finalizers.remove("karmada.io/execution-controller")
    merged = works.merge_work(current, desired)
    assert merged.spec == desired.spec
    assert merged.metadata.labels["work.karmada.io/permanent-id"] == "wid"
    assert list(merged.metadata.finalizers) == ["other/finalizer", "karmada.io/execution-controller"]
    assert merged.status == current.status


def _manifest_changed(w: work_pb2.Work) -> None:
    w.spec.workload.manifests[0] = b"{}"


def _suspended(w: work_pb2.Work) -> None:
    w.spec.suspend_dispatching = True


def _label_gone(w: work_pb2.Work) -> None:
    w.metadata.labels.clear()


def _annotation_changed(w: work_pb2.Work) -> None:
    w.metadata.annotations["resourcetemplate.karmada.io/generation"] = "7"


def _finalizer_gone(w: work_pb2.Work) -> None:
    w.metadata.finalizers.remove("karmada.io/execution-controller")


def _status_changed(w: work_pb2.Work) -> None:
    w.status.conditions[0].status = "False"


@pytest.mark.parametrize(("edit", "carried"), [
    (None, True),
    (_status_changed, True),  # the status is not the binding controller's
    (_manifest_changed, False),
    (_suspended, False),
    (_label_gone, False),
    (_annotation_changed, False),
    (_finalizer_gone, False),
])
def test_a_work_carries_what_is_desired_exactly_when_merging_changes_nothing(edit: Any, carried: bool) -> None:
    desired = _desired()
    current = _with_others(desired)
    if edit is not None:
        edit(current)
    assert works.carries(current, desired) is carried
    assert (works.merge_work(current, desired) == current) is carried


def test_building_works_leaves_the_template_as_it_was() -> None:
    t = template("apps/v1", "Deployment", {"replicas": 3})
    before = t.SerializeToString(deterministic=True)
    first = works.build_works(binding(spec([("m1", 2), ("m2", 1)])), t, False)
    again = works.build_works(binding(spec([("m1", 2), ("m2", 1)])), t, False)
    assert t.SerializeToString(deterministic=True) == before
    assert [json.loads(w.spec.workload.manifests[0])["spec"]["replicas"] for w in first] == [2, 1]
    assert first == again
