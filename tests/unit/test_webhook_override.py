"""OverridePolicy and ClusterOverridePolicy admission (services/webhook/rules/override.py): each
refusal names its field, as Karmada's webhook and CRD schema refuse it."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from flotilla.api import codec
from services.webhook.defaulting import AdmissionConfig, default_object
from services.webhook.validation import validate_object

BASE: dict[str, Any] = {
    "apiVersion": "policy.karmada.io/v1alpha1", "kind": "OverridePolicy",
    "metadata": {"name": "nginx-op", "namespace": "default"},
    "spec": {
        "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"}],
        "overrideRules": [{
            "targetCluster": {"clusterNames": ["member1"]},
            "overriders": {
                "plaintext": [{"path": "/spec/replicas", "operator": "replace", "value": 2}],
                "imageOverrider": [{"component": "Registry", "operator": "replace", "value": "r.io",
                                    "predicate": {"path": "/spec/template/spec/containers/0/image"}}],
                "commandOverrider": [{"containerName": "nginx", "operator": "add", "value": ["-x"]}],
                "argsOverrider": [{"containerName": "nginx", "operator": "remove", "value": ["-y"]}],
                "labelsOverrider": [{"operator": "add", "value": {"env": "prod"}}],
                "annotationsOverrider": [{"operator": "remove", "value": {"example.io/a": ""}}],
                "fieldOverrider": [{"fieldPath": "/data/config.yaml", "yaml": [
                    {"subPath": "/a/b", "operator": "replace", "value": 1}]}],
            }}]}}

RULE = "spec.overrideRules[0]"
OVR = f"{RULE}.overriders"


def errors(doc: dict[str, Any]) -> list[str]:
    return [str(e) for e in validate_object(codec.from_dict(doc), None, AdmissionConfig())]


def with_change(path: list[Any], value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(BASE)
    target: Any = doc
    for part in path[:-1]:
        target = target[part]
    if value is None:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return doc


def overriders(*path: Any) -> list[Any]:
    return ["spec", "overrideRules", 0, "overriders", *path]


CASES: list[tuple[str, list[Any], Any, str]] = [
    ("plaintext path without slash", overriders("plaintext", 0, "path"), "spec/replicas",
     f'{OVR}.plaintext[0].path: invalid value "spec/replicas"'),
    ("plaintext path missing", overriders("plaintext", 0, "path"), None, f"{OVR}.plaintext[0].path: required"),
    ("plaintext operator", overriders("plaintext", 0, "operator"), "merge",
     f'{OVR}.plaintext[0].operator: unsupported value "merge"'),
    ("image component", overriders("imageOverrider", 0, "component"), "Host",
     f'{OVR}.imageOverrider[0].component: unsupported value "Host"'),
    ("image component missing", overriders("imageOverrider", 0, "component"), None,
     f"{OVR}.imageOverrider[0].component: required"),
    ("image operator", overriders("imageOverrider", 0, "operator"), "set",
     f'{OVR}.imageOverrider[0].operator: unsupported value "set"'),
    ("image predicate path", overriders("imageOverrider", 0, "predicate", "path"), "spec/x",
     f"{OVR}.imageOverrider[0].predicate.path: invalid value"),
    ("command container", overriders("commandOverrider", 0, "containerName"), None,
     f"{OVR}.commandOverrider[0].containerName: required"),
    ("args replace is no operator of args", overriders("argsOverrider", 0, "operator"), "replace",
     f'{OVR}.argsOverrider[0].operator: unsupported value "replace"'),
    ("label key", overriders("labelsOverrider", 0, "value"), {"-bad-": "x"},
     f"{OVR}.labelsOverrider[0].value[-bad-]: invalid value"),
    ("label value", overriders("labelsOverrider", 0, "value"), {"env": "not a value"},
     f"{OVR}.labelsOverrider[0].value[env]: invalid value"),
    ("annotation key", overriders("annotationsOverrider", 0, "value"), {"a b": "x"},
     f"{OVR}.annotationsOverrider[0].value[a b]: invalid value"),
    ("label operator", overriders("labelsOverrider", 0, "operator"), None,
     f"{OVR}.labelsOverrider[0].operator: required"),
    ("field overrider both", overriders("fieldOverrider", 0, "json"), [{"subPath": "/a", "operator": "remove"}],
     f"{OVR}.fieldOverrider[0]: FieldOverrider has both YAML and JSON set"),
    ("field overrider neither", overriders("fieldOverrider", 0, "yaml"), None,
     f"{OVR}.fieldOverrider[0]: required: FieldOverrider must have either JSON or YAML set"),
    ("field path", overriders("fieldOverrider", 0, "fieldPath"), "data", f"{OVR}.fieldOverrider[0].fieldPath"),
    ("sub path escape", overriders("fieldOverrider", 0, "yaml", 0, "subPath"), "/a~2",
     f"{OVR}.fieldOverrider[0].yaml[0].subPath: invalid value"),
    ("replace needs a value", overriders("fieldOverrider", 0, "yaml", 0, "value"), None,
     f"{OVR}.fieldOverrider[0].yaml[0].value: value is required for add or replace operation"),
    ("remove takes no value", overriders("fieldOverrider", 0, "yaml", 0, "operator"), "remove",
     f"{OVR}.fieldOverrider[0].yaml[0].value: value is not allowed for remove operation"),
    ("target cluster field selector", ["spec", "overrideRules", 0, "targetCluster"],
     {"fieldSelector": {"matchExpressions": [{"key": "color", "operator": "In", "values": ["x"]}]}},
     f"{RULE}.targetCluster.fieldSelector.matchExpressions[0].key"),
    ("target cluster label selector", ["spec", "overrideRules", 0, "targetCluster"],
     {"labelSelector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}},
     f"{RULE}.targetCluster.labelSelector.matchExpressions[0].operator"),
    ("selector namespace", ["spec", "resourceSelectors", 0, "namespace"], "other",
     "spec.resourceSelectors[0].namespace: invalid value"),
    ("selector kind", ["spec", "resourceSelectors", 0, "kind"], None, "spec.resourceSelectors[0].kind: required"),
    ("deprecated targetCluster beside overrideRules", ["spec", "targetCluster"], {"clusterNames": ["m"]},
     "spec.targetCluster: overrideRules and targetCluster can't co-exist"),
    ("deprecated overriders beside overrideRules", ["spec", "overriders"],
     {"labelsOverrider": [{"operator": "add", "value": {"a": "b"}}]},
     "spec.overriders: overrideRules and overriders can't co-exist"),
]


@pytest.mark.parametrize(("name", "path", "value", "expected"), CASES, ids=[c[0] for c in CASES])
def test_refused_at_its_field(name: str, path: list[Any], value: Any, expected: str) -> None:
    found = errors(with_change(path, value))
    assert any(e.startswith(expected) for e in found), found


def test_valid_policy_is_accepted() -> None:
    assert errors(BASE) == []


def test_cluster_override_policy_deprecated_form_is_accepted_and_checked() -> None:
    doc: dict[str, Any] = {
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterOverridePolicy", "metadata": {"name": "c"},
        "spec": {"targetCluster": {"clusterNames": ["member1"]},
                 "overriders": {"imageOverrider": [{"component": "Tag", "operator": "replace", "value": "v2"}]}}}
    assert errors(doc) == []
    doc["spec"]["overriders"]["imageOverrider"][0]["operator"] = "Replace"
    assert [e.split(":")[0] for e in errors(doc)] == ["spec.overriders.imageOverrider[0].operator"]


def test_policy_without_selectors_is_accepted() -> None:
    """Empty resourceSelectors select every resource of the namespace (Karmada)."""
    doc = copy.deepcopy(BASE)
    del doc["spec"]["resourceSelectors"]
    assert errors(doc) == []


def test_unknown_overrider_field_is_refused_by_the_codec() -> None:
    doc = with_change(overriders("imageOverrider", 0, "componnet"), "Tag")
    with pytest.raises(codec.CodecError, match=r"imageOverrider\[0\]\.componnet: unknown field"):
        codec.from_dict(doc)


def test_override_policy_selectors_default_to_its_namespace() -> None:
    """Karmada's mutating webhook for OverridePolicy."""
    policy = codec.from_dict(BASE)
    default_object(policy, None, AdmissionConfig(), datetime.now(UTC))
    assert [s.namespace for s in policy.spec.resource_selectors] == ["default"]  # type: ignore[attr-defined]
