"""The override manager (flotilla/rules/overrides.py), with the cases of Karmada's
pkg/util/overridemanager tests ported as tables."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flotilla.api import codec
from flotilla.api.v1 import cluster_pb2, policy_pb2
from flotilla.rules import overrides
from flotilla.rules.overrides import OverrideError

DIGEST = "sha256:dbcc1c35ac38df41fd2f5e4130b32ffdb93ebae8b3dbe638c23575912276fc9c"


def cluster(name: str, labels: dict[str, str] | None = None) -> cluster_pb2.Cluster:
    c = cluster_pb2.Cluster()
    c.metadata.name = name
    c.metadata.labels.update(labels or {})
    return c


def workload(kind: str = "Deployment", images: tuple[str, ...] = ("fictional.registry.example/imagename:v1.0.0",),
             **container: Any) -> dict[str, Any]:
    containers = [{"name": f"c{i}", "image": image, **container} for i, image in enumerate(images)]
    pod_spec = {"containers": containers}
    api_version = {"Pod": "v1", "Job": "batch/v1"}.get(kind, "apps/v1")
    spec: dict[str, Any] = pod_spec if kind == "Pod" else {"template": {"spec": pod_spec}}
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "test", "namespace": "default"},
            "spec": spec}


def image_of(obj: dict[str, Any], i: int = 0) -> str:
    spec = obj["spec"] if obj["kind"] == "Pod" else obj["spec"]["template"]["spec"]
    return str(spec["containers"][i]["image"])


def overriders(doc: dict[str, Any]) -> policy_pb2.Overriders:
    return codec.parse_as(policy_pb2.Overriders, doc)


def policy(name: str, spec: dict[str, Any], namespace: str = "default", cluster_scoped: bool = False,
           ) -> Any:
    kind = "ClusterOverridePolicy" if cluster_scoped else "OverridePolicy"
    metadata = {"name": name} if cluster_scoped else {"name": name, "namespace": namespace}
    return codec.from_dict({"apiVersion": "policy.karmada.io/v1alpha1", "kind": kind, "metadata": metadata,
                            "spec": spec})


# -- imageOverrider (imageoverride_test.go) ------------------------------------------------------

IMAGE_CASES = [
    ("Job", "perl:5.34.0", "Registry", "add", "registry.k8s.io", "registry.k8s.io/perl:5.34.0"),
    ("Deployment", None, "Registry", "add", ".test", "fictional.registry.example.test/imagename:v1.0.0"),
    ("Deployment", None, "Registry", "replace", "fictional.registry.us", "fictional.registry.us/imagename:v1.0.0"),
    ("Deployment", None, "Registry", "remove", "fictional.registry.us", "imagename:v1.0.0"),
    ("Deployment", None, "Repository", "add", "/nginx", "fictional.registry.example/imagename/nginx:v1.0.0"),
    ("Deployment", None, "Repository", "replace", "nginx", "fictional.registry.example/nginx:v1.0.0"),
    ("Deployment", None, "Repository", "remove", "nginx", "fictional.registry.example/:v1.0.0"),
    # Only one of tag and digest is valid: "v1.0.0sha256:..." is neither, so nothing changes.
    ("Deployment", None, "Tag", "add", DIGEST, "fictional.registry.example/imagename:v1.0.0"),
    ("Deployment", None, "Tag", "replace", DIGEST, f"fictional.registry.example/imagename@{DIGEST}"),
    ("Deployment", None, "Tag", "remove", DIGEST, "fictional.registry.example/imagename"),
    ("Pod", None, "Repository", "replace", "nginx", "fictional.registry.example/nginx:v1.0.0"),
    ("StatefulSet", None, "Repository", "replace", "nginx", "fictional.registry.example/nginx:v1.0.0"),
    ("ReplicaSet", None, "Repository", "replace", "nginx", "fictional.registry.example/nginx:v1.0.0"),
    ("DaemonSet", None, "Repository", "replace", "nginx", "fictional.registry.example/nginx:v1.0.0"),
    ("Deployment", "nginx", "Registry", "add", "registry.member1", "registry.member1/nginx"),
    ("Deployment", "localhost/nginx:1", "Registry", "replace", "r.io", "r.io/nginx:1"),
    ("Deployment", "library/nginx:1", "Registry", "replace", "r.io", "r.io/library/nginx:1"),
    ("Deployment", "r.io:5000/nginx:1", "Tag", "replace", "2", "r.io:5000/nginx:2"),
]


@pytest.mark.parametrize(("kind", "image", "component", "operator", "value", "want"), IMAGE_CASES)
def test_image_overrider_without_predicate(kind: str, image: str | None, component: str, operator: str,
                                           value: str, want: str) -> None:
    obj = workload(kind, (image,) if image else ("fictional.registry.example/imagename:v1.0.0",))
    overrides.apply_overriders(obj, overriders(
        {"imageOverrider": [{"component": component, "operator": operator, "value": value}]}))
    assert image_of(obj) == want


def test_image_overrider_every_container_without_predicate() -> None:
    obj = workload("Deployment", ("fictional.registry.example/imagename:v1.0.0", "registry.k8s.io/nginx-slim:0.8"))
    overrides.apply_overriders(obj, overriders(
        {"imageOverrider": [{"component": "Repository", "operator": "replace", "value": "nginx"}]}))
    assert (image_of(obj, 0), image_of(obj, 1)) == ("fictional.registry.example/nginx:v1.0.0",
                                                    "registry.k8s.io/nginx:0.8")


def test_image_overrider_with_predicate_changes_that_path_only() -> None:
    obj = workload("Deployment", ("fictional.registry.example/imagename:v1.0.0", "registry.k8s.io/nginx-slim:0.8"))
    overrides.apply_overriders(obj, overriders({"imageOverrider": [
        {"predicate": {"path": "/spec/template/spec/containers/1/image"}, "component": "Registry",
         "operator": "replace", "value": "fictional.registry.us"}]}))
    assert (image_of(obj, 0), image_of(obj, 1)) == ("fictional.registry.example/imagename:v1.0.0",
                                                    "fictional.registry.us/nginx-slim:0.8")


def test_image_overrider_of_unknown_kind_without_predicate_changes_nothing() -> None:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "b"}}
    overrides.apply_overriders(obj, overriders({"imageOverrider": [{"component": "Tag", "operator": "remove"}]}))
    assert obj["data"] == {"a": "b"}


def test_image_overrider_predicate_path_missing_fails() -> None:
    with pytest.raises(OverrideError):
        overrides.apply_overriders(workload(), overriders({"imageOverrider": [
            {"predicate": {"path": "/spec/template/spec/containers/3/image"}, "component": "Tag",
             "operator": "remove"}]}))


# -- commandOverrider / argsOverrider (commandargsoverride_test.go) --------------------------------

COMMAND_CASES: list[tuple[str, dict[str, Any], str, str, list[str], list[str] | None]] = [
    ("Deployment", {"command": ["echo", "hello"]}, "command", "add", ["world"], ["echo", "hello", "world"]),
    ("Deployment", {"command": ["echo", "hello", "world"]}, "command", "remove", ["world"], ["echo", "hello"]),
    ("Deployment", {"command": ["echo", "hello"]}, "command", "remove", [], ["echo", "hello"]),
    ("Pod", {"command": ["echo"]}, "command", "add", ["x"], ["echo", "x"]),
    ("StatefulSet", {"command": ["echo"]}, "command", "add", ["x"], ["echo", "x"]),
    ("ReplicaSet", {"command": ["echo", "x"]}, "command", "remove", ["x"], ["echo"]),
    ("DaemonSet", {"command": ["echo", "x"]}, "command", "remove", ["x"], ["echo"]),
    ("Job", {"args": ["-v"]}, "args", "add", ["--debug"], ["-v", "--debug"]),
    # No args yet: add creates them, remove makes an empty list.
    ("Deployment", {}, "args", "add", ["--debug"], ["--debug"]),
    ("Deployment", {}, "args", "remove", ["--debug"], []),
]


@pytest.mark.parametrize(("kind", "container", "target", "operator", "value", "want"), COMMAND_CASES)
def test_command_args_overrider(kind: str, container: dict[str, Any], target: str, operator: str,
                                value: list[str], want: list[str] | None) -> None:
    obj = workload(kind, **container)
    field = "commandOverrider" if target == "command" else "argsOverrider"
    overrides.apply_overriders(obj, overriders({field: [{"containerName": "c0", "operator": operator,
                                                         "value": value}]}))
    spec = obj["spec"] if kind == "Pod" else obj["spec"]["template"]["spec"]
    assert spec["containers"][0].get(target) == want


def test_command_overrider_only_the_named_container() -> None:
    obj = workload("Deployment", ("a", "b"), command=["run"])
    overrides.apply_overriders(obj, overriders({"commandOverrider": [
        {"containerName": "c1", "operator": "add", "value": ["--x"]}]}))
    containers = obj["spec"]["template"]["spec"]["containers"]
    assert [c["command"] for c in containers] == [["run"], ["run", "--x"]]


# -- labelsOverrider / annotationsOverrider (labelannotationoverrider_test.go) ---------------------

LABEL_CASES: list[tuple[dict[str, str] | None, str, dict[str, str], dict[str, str] | None]] = [
    (None, "add", {"a": "1"}, {"a": "1"}),
    (None, "replace", {"a": "1"}, None),
    (None, "remove", {"a": "1"}, None),
    ({"a": "0", "b": "0"}, "replace", {"a": "1", "c": "1"}, {"a": "1", "b": "0"}),
    ({"a": "0"}, "add", {"b": "1"}, {"a": "0", "b": "1"}),
    ({"a": "0", "b": "0"}, "remove", {"a": "", "c": ""}, {"b": "0"}),
    ({"a": "0"}, "add", {"a": "1"}, {"a": "1"}),
    # A key with a "/" is one key (escaped in the JSON pointer).
    ({}, "add", {"example.io/team": "x"}, {"example.io/team": "x"}),
    ({"example.io/team": "x", "b": "0"}, "remove", {"example.io/team": ""}, {"b": "0"}),
]


@pytest.mark.parametrize("which", ["labels", "annotations"])
@pytest.mark.parametrize(("before", "operator", "value", "want"), LABEL_CASES)
def test_labels_annotations_overrider(which: str, before: dict[str, str] | None, operator: str,
                                      value: dict[str, str], want: dict[str, str] | None) -> None:
    obj = workload()
    if before is not None:
        obj["metadata"][which] = dict(before)
    overrides.apply_overriders(obj, overriders({f"{which}Overrider": [{"operator": operator, "value": value}]}))
    assert obj["metadata"].get(which) == want


# -- plaintext and fieldOverrider (overridemanager_test.go) ----------------------------------------

PLAINTEXT_CASES: list[tuple[dict[str, Any], Any]] = [
    ({"path": "/spec/replicas", "operator": "add", "value": 3}, 3),
    ({"path": "/spec/replicas", "operator": "replace", "value": 5}, 5),
    ({"path": "/spec/template/spec/containers/0/ports", "operator": "add", "value": [{"containerPort": 80}]},
     [{"containerPort": 80}]),
]


@pytest.mark.parametrize(("op", "want"), PLAINTEXT_CASES)
def test_plaintext(op: dict[str, Any], want: Any) -> None:
    obj = workload()
    obj["spec"]["replicas"] = 1
    overrides.apply_overriders(obj, overriders({"plaintext": [op]}))
    assert overrides.get_pointer(obj, op["path"]) == want


@pytest.mark.parametrize("op", [
    {"path": "/spec/missing/x", "operator": "add", "value": 1},  # no parent
    {"path": "/spec/missing", "operator": "replace", "value": 1},  # replace needs the target
    {"path": "/spec/missing", "operator": "remove"},
    {"path": "/spec/template/spec/containers/5", "operator": "replace", "value": {}},
])
def test_plaintext_that_cannot_apply_fails(op: dict[str, Any]) -> None:
    with pytest.raises(OverrideError):
        overrides.apply_overriders(workload(), overriders({"plaintext": [op]}))


def test_plaintext_remove() -> None:
    obj = workload()
    obj["spec"]["paused"] = True
    overrides.apply_overriders(obj, overriders({"plaintext": [{"path": "/spec/paused", "operator": "remove"}]}))
    assert "paused" not in obj["spec"]


def configmap(data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "test1", "namespace": "default"},
            "data": data}


def field_policy(kind: str, path: str, sub: dict[str, Any]) -> Any:
    return policy("test1", {
        "resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "default", "name": "test1"}],
        "overrideRules": [{"targetCluster": {"clusterNames": ["test1"]},
                           "overriders": {"fieldOverrider": [{"fieldPath": path, kind: [sub]}]}}]})


def test_field_overrider_yaml() -> None:
    p = field_policy("yaml", "/data/test.yaml",
                     {"subPath": "/key/key1", "operator": "replace", "value": "updated_value"})
    done = overrides.apply_overrides(configmap({"test.yaml": "\nkey: \n  key1: value\n"}), cluster("test1"), [], [p])
    assert done.manifest["data"] == {"test.yaml": "key:\n  key1: updated_value\n"}
    assert [a.policy for a in done.overrides] == ["test1"] and not done.cluster_overrides


def test_field_overrider_json() -> None:
    p = field_policy("json", "/data/test.json",
                     {"subPath": "/key/key1", "operator": "replace", "value": "updated_value"})
    done = overrides.apply_overrides(configmap({"test.json": '{"key":{"key1":"value"}}'}), cluster("test1"), [], [p])
    assert done.manifest["data"] == {"test.json": '{"key":{"key1":"updated_value"}}'}


def test_field_overrider_of_a_field_that_is_no_string_fails() -> None:
    p = field_policy("json", "/metadata", {"subPath": "/a", "operator": "add", "value": 1})
    with pytest.raises(OverrideError, match="OverridePolicy test1 for cluster test1"):
        overrides.apply_overrides(configmap({}), cluster("test1"), [], [p])


# -- which rules, in which order (TestGetMatchingOverridePolicies) ----------------------------------

def _plain(annotation: str) -> dict[str, Any]:
    return {"plaintext": [{"path": "/metadata/annotations", "operator": "add", "value": annotation}]}


O1, O2, O3 = _plain("foo: bar"), _plain("aaa: bbb"), _plain("hello: world")
SELECT_TEST = [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "test"}]
POLICY1 = policy("overridePolicy1", {"resourceSelectors": SELECT_TEST, "overrideRules": [
    {"targetCluster": {"clusterNames": ["cluster1", "cluster2"]}, "overriders": O1},
    {"targetCluster": {"clusterNames": ["cluster2"]}, "overriders": O2}]})
POLICY2 = policy("overridePolicy2", {"overrideRules": [
    {"targetCluster": {"clusterNames": ["cluster1", "cluster2"]}, "overriders": O3}]})
POLICY3 = policy("overridePolicy3", {"resourceSelectors": [], "overrideRules": [
    {"targetCluster": {"clusterNames": ["cluster1", "cluster2"]}, "overriders": O3}]})
OLD_POLICY = policy("oldOverridePolicy", {"targetCluster": {"clusterNames": ["cluster1"]}, "overriders": O3},
                    cluster_scoped=True)

MATCHING_CASES = [
    ("OverrideRules test 1", [POLICY1, POLICY2], "cluster1", [("overridePolicy2", O3), ("overridePolicy1", O1)]),
    ("OverrideRules test 2", [POLICY1, POLICY2], "cluster2",
     [("overridePolicy2", O3), ("overridePolicy1", O1), ("overridePolicy1", O2)]),
    ("OverrideRules test 3", [POLICY3], "cluster2", [("overridePolicy3", O3)]),
    ("TargetCluster and Overriders test", [OLD_POLICY], "cluster1", [("oldOverridePolicy", O3)]),
    ("deprecated targetCluster elsewhere", [OLD_POLICY], "cluster2", []),
]


@pytest.mark.parametrize(("name", "policies", "cluster_name", "want"), MATCHING_CASES,
                         ids=[c[0] for c in MATCHING_CASES])
def test_matching_rules(name: str, policies: list[Any], cluster_name: str, want: list[tuple[str, Any]]) -> None:
    got = overrides.matching_rules(policies, workload(), cluster(cluster_name))
    assert [(r.policy, codec.to_dict(r.overriders)) for r in got] == want


def test_implicit_priority_name_over_label_selector_over_kind_then_name() -> None:
    def p(name: str, selector: dict[str, Any]) -> Any:
        return policy(name, {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", **selector}]})
    obj = workload()
    obj["metadata"]["labels"] = {"app": "x"}
    policies = [p("a-name", {"name": "test"}), p("b-label", {"labelSelector": {"matchLabels": {"app": "x"}}}),
                p("c-kind", {}), p("a-kind", {}), p("other", {"name": "other"}), policy("z-all", {})]
    got = [r.policy for r in overrides.matching_rules(policies, obj, cluster("m"))]
    # No selectors counts as a kind-only match (PriorityMatchAll), so z-all sorts by name among them.
    assert got == ["a-kind", "c-kind", "z-all", "b-label", "a-name"]


def test_target_cluster_by_labels_and_exclude() -> None:
    p = policy("p", {"overrideRules": [
        {"targetCluster": {"labelSelector": {"matchLabels": {"env": "prod"}}, "exclude": ["m2"]},
         "overriders": O1}]})
    assert [r.policy for r in overrides.matching_rules([p], workload(), cluster("m1", {"env": "prod"}))] == ["p"]
    assert overrides.matching_rules([p], workload(), cluster("m2", {"env": "prod"})) == []
    assert overrides.matching_rules([p], workload(), cluster("m3", {"env": "dev"})) == []


# -- the whole manager (Test_overrideManagerImpl_ApplyLabelAnnotationOverriderPolicies) -------------

def test_cluster_policies_first_then_namespaced_which_win() -> None:
    cop = policy("cop", {"overrideRules": [{"overriders": {"labelsOverrider": [
        {"operator": "add", "value": {"env": "from-cop", "cop": "yes"}}]}}]}, cluster_scoped=True)
    op = policy("op", {"resourceSelectors": SELECT_TEST, "overrideRules": [{"overriders": {"labelsOverrider": [
        {"operator": "add", "value": {"env": "from-op"}}]}}]})
    other_namespace = policy("elsewhere", {"overrideRules": [{"overriders": {"labelsOverrider": [
        {"operator": "add", "value": {"env": "elsewhere"}}]}}]}, namespace="other")
    obj = workload()
    done = overrides.apply_overrides(obj, cluster("m1"), [cop], [op, other_namespace])
    assert done.manifest["metadata"]["labels"] == {"env": "from-op", "cop": "yes"}
    assert "labels" not in obj["metadata"], "the input manifest is not changed"
    annotations = done.annotations()
    assert json.loads(annotations[overrides.APPLIED_OVERRIDES_ANNOTATION]) == [
        {"policyName": "op", "overriders": {"labelsOverrider": [{"operator": "add", "value": {"env": "from-op"}}]}}]
    assert json.loads(annotations[overrides.APPLIED_CLUSTER_OVERRIDES_ANNOTATION])[0]["policyName"] == "cop"


def test_cluster_scoped_object_gets_cluster_policies_only() -> None:
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "test2"}}
    cop = policy("test2", {"resourceSelectors": [{"apiVersion": "rbac.authorization.k8s.io/v1",
                                                  "kind": "ClusterRole", "name": "test2"}],
                           "overrideRules": [{"targetCluster": {"clusterNames": ["test2"]}, "overriders": {
                               "annotationsOverrider": [{"operator": "add", "value": {"a": "b"}}]}}]},
                 cluster_scoped=True)
    op = policy("op", {"overrideRules": [{"overriders": {"annotationsOverrider": [
        {"operator": "add", "value": {"c": "d"}}]}}]})
    done = overrides.apply_overrides(role, cluster("test2"), [cop], [op])
    assert done.manifest["metadata"]["annotations"] == {"a": "b"}
    assert set(done.annotations()) == {overrides.APPLIED_CLUSTER_OVERRIDES_ANNOTATION}


def test_nothing_applied_no_annotations() -> None:
    done = overrides.apply_overrides(workload(), cluster("m1"), [], [])
    assert done.annotations() == {} and done.manifest == workload()


def test_applied_items_sorted_by_policy_name() -> None:
    rules = [overrides.AppliedRule("b", overriders(O1)), overrides.AppliedRule("a", overriders(O2))]
    assert [i["policyName"] for i in json.loads(overrides.applied_json(rules))] == ["a", "b"]


@pytest.mark.parametrize(("image", "parts"), [
    ("nginx", ("", "nginx", "", "")),
    ("nginx:1.2", ("", "nginx", "1.2", "")),
    ("docker.io/library/nginx:1.2", ("docker.io", "library/nginx", "1.2", "")),
    ("localhost:5000/a/b", ("localhost:5000", "a/b", "", "")),
    (f"r.io/a@{DIGEST}", ("r.io", "a", "", DIGEST)),
])
def test_parse_image(image: str, parts: tuple[str, str, str, str]) -> None:
    parsed = overrides.parse_image(image)
    assert (parsed.hostname, parsed.repository, parsed.tag, parsed.digest) == parts
    assert str(parsed) == image


@pytest.mark.parametrize("image", ["", "a b", "nginx:bad:tag", "nginx@sha256:zz"])
def test_parse_image_refuses(image: str) -> None:
    with pytest.raises(OverrideError):
        overrides.parse_image(image)
