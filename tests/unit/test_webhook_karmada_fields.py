"""Nothing accepted that does nothing: each Karmada field of the refused table is refused at its
path (`not supported by Flotilla: <path>`), each of the warned table admitted with one warning
line."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from services.webhook.rules.karmada_fields import REFUSED, UNSUPPORTED, WARNED, KarmadaField, field_warnings
from tests.admission_cases import CLUSTER, DIVIDED, HEALTH_INTERPRETER, admit, parse_document


def _cluster_policy() -> dict[str, Any]:
    doc = parse_document(DIVIDED)
    doc["kind"] = "ClusterPropagationPolicy"
    del doc["metadata"]["namespace"]
    return doc


_RESOURCE = {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "nginx"}
BASES: dict[str, dict[str, Any]] = {
    "PropagationPolicy": parse_document(DIVIDED),
    "ClusterPropagationPolicy": _cluster_policy(),
    "Cluster": parse_document(CLUSTER),
    "ResourceInterpreterCustomization": parse_document(HEALTH_INTERPRETER),
    # Bindings are the detector's; a user may write one, as in Karmada.
    "ResourceBinding": {"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
                        "metadata": {"name": "nginx-deployment", "namespace": "default"},
                        "spec": {"resource": _RESOURCE}},
    "ClusterResourceBinding": {"apiVersion": "work.karmada.io/v1alpha2", "kind": "ClusterResourceBinding",
                               "metadata": {"name": "nginx-deployment"}, "spec": {"resource": _RESOURCE}},
}
# A value Karmada accepts at each path of the tables (the customizations: any script that compiles).
SAMPLES: dict[str, Any] = {
    "spec.dependentOverrides": ["nginx-override"],
    "spec.placement.workloadAffinity": {"affinity": {"groupByLabelKey": "app"}},
    "spec.resourceModels": [{"grade": 0, "ranges": [{"name": "cpu", "min": "0", "max": "1"}]}],
    "spec.association": True,
    "spec.impersonatorSecretRef": {"namespace": "karmada-cluster", "name": "member1-impersonator"},
    "spec.workloadAffinityGroups": {"affinityGroup": "app"},
    "spec.replicaRequirements.nodeClaim.hardNodeAffinity": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]},
}
_SCRIPT = {"luaScript": "function Interpret(observedObj)\n  return observedObj\nend\n"}


def _with(kind: str, path: str) -> dict[str, Any]:
    doc = copy.deepcopy(BASES[kind])
    *parents, last = path.split(".")
    node = doc
    for name in parents:
        node = node.setdefault(name, {})
    node[last] = SAMPLES.get(path, _SCRIPT)
    return doc


def _cases(table: tuple[KarmadaField, ...]) -> list[tuple[str, str]]:
    return [(kind, f.path) for f in table for kind in f.kinds]


def test_the_bases_are_admitted_without_a_warning() -> None:
    for kind, doc in BASES.items():
        obj, errors = admit(doc)
        assert obj is not None and errors == [], kind
        assert field_warnings(obj) == [], kind


@pytest.mark.parametrize(("kind", "path"), _cases(REFUSED))
def test_a_field_flotilla_does_not_build_is_refused_at_its_path(kind: str, path: str) -> None:
    _, errors = admit(_with(kind, path))
    assert [e.path for e in errors] == [path], errors
    assert errors[0].reason.startswith(f"{UNSUPPORTED}: {path} ("), errors


@pytest.mark.parametrize(("kind", "path"), _cases(WARNED))
def test_a_field_without_effect_is_admitted_with_a_warning(kind: str, path: str) -> None:
    obj, errors = admit(_with(kind, path))
    assert obj is not None and errors == [], errors
    [warning] = field_warnings(obj)
    assert warning.startswith(f"{path}: ")


def test_empty_values_are_neither_refused_nor_warned() -> None:
    doc = _with("PropagationPolicy", "spec.dependentOverrides")
    doc["spec"]["dependentOverrides"] = []
    doc["spec"]["association"] = False
    obj, errors = admit(doc)
    assert obj is not None and errors == [] and field_warnings(obj) == []


def test_the_tables_do_not_overlap_and_name_fields_of_the_kinds() -> None:
    refused, warned = set(_cases(REFUSED)), set(_cases(WARNED))
    assert not refused & warned
    assert {kind for kind, _ in refused | warned} <= set(BASES)
