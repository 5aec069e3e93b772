"""Which apiVersion/kind pairs `flotillactl apply` accepts, and what it says about the others."""

from __future__ import annotations

import pytest

from flotilla.cli.kinds import KnownKinds, crd_kinds

WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "names": {"kind": "Widget", "plural": "widgets"},
        "scope": "Namespaced",
        "versions": [{"name": "v1", "served": True, "storage": True},
                     {"name": "v1beta1", "served": False, "storage": False}],
    },
}

KNOWN = [
    ("v1", "ConfigMap"),
    ("v1", "LimitRange"),
    ("apps/v1", "Deployment"),
    ("autoscaling/v1", "HorizontalPodAutoscaler"),
    ("discovery.k8s.io/v1", "EndpointSlice"),
    ("policy.karmada.io/v1alpha1", "PropagationPolicy"),
    ("policy.karmada.io/v1alpha1", "OverridePolicy"),
    ("cluster.karmada.io/v1alpha1", "Cluster"),
    ("work.karmada.io/v1alpha2", "ResourceBinding"),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
]


@pytest.mark.parametrize(("api_version", "kind"), KNOWN, ids=[f"{v}/{k}" for v, k in KNOWN])
def test_built_in_kinds_are_known(api_version: str, kind: str) -> None:
    assert KnownKinds().problem({"apiVersion": api_version, "kind": kind}) == ""


UNKNOWN = [
    # (apiVersion, kind, the whole problem)
    ("v1", "ConfigMapp", 'no matches for kind "ConfigMapp" in version "v1" (did you mean "ConfigMap"?)'),
    ("v1", "configmap", 'no matches for kind "configmap" in version "v1" (did you mean "ConfigMap"?)'),
    ("apps/v2", "Deployment",
     'no matches for kind "Deployment" in version "apps/v2" (Deployment is served at apps/v1)'),
    ("work.karmada.io/v1alpha1", "ResourceBinding",
     'no matches for kind "ResourceBinding" in version "work.karmada.io/v1alpha1" '
     "(ResourceBinding is served at work.karmada.io/v1alpha2)"),
    ("example.com/v1", "Widget",
     'no matches for kind "Widget" in version "example.com/v1" (is its CustomResourceDefinition applied?)'),
    ("apps/v1", "Frobnicator", 'no matches for kind "Frobnicator" in version "apps/v1"'),
]


@pytest.mark.parametrize(("api_version", "kind", "problem"), UNKNOWN, ids=[f"{v}/{k}" for v, k, _ in UNKNOWN])
def test_unknown_kinds_are_named_with_a_hint(api_version: str, kind: str, problem: str) -> None:
    assert KnownKinds().problem({"apiVersion": api_version, "kind": kind}) == problem


@pytest.mark.parametrize(("doc", "problem"), [
    ({"kind": "ConfigMap"}, "apiVersion not set"),
    ({"apiVersion": "v1"}, "kind not set"),
    ({}, "apiVersion not set, kind not set"),
    ({"apiVersion": 1, "kind": "ConfigMap"}, "apiVersion not set"),
])
def test_missing_type_fields(doc: dict, problem: str) -> None:
    assert KnownKinds().problem(doc) == problem


def test_a_crd_makes_its_served_versions_known() -> None:
    assert crd_kinds(WIDGET_CRD) == {("example.com/v1", "Widget")}
    known = KnownKinds([WIDGET_CRD])
    assert known.problem({"apiVersion": "example.com/v1", "kind": "Widget"}) == ""
    # Not served: as unknown as any other version, with the served one named.
    assert known.problem({"apiVersion": "example.com/v1beta1", "kind": "Widget"}) == (
        'no matches for kind "Widget" in version "example.com/v1beta1" (Widget is served at example.com/v1)')
    assert known.problem({"apiVersion": "example.com/v1", "kind": "Widgit"}) == (
        'no matches for kind "Widgit" in version "example.com/v1" (did you mean "Widget"?)')


@pytest.mark.parametrize("crd", [{}, {"spec": None}, {"spec": {"group": "x.io", "names": {}}},
                                 {"spec": {"group": "x.io", "names": {"kind": "X"}, "versions": ["v1"]}}])
def test_a_malformed_crd_declares_nothing(crd: dict) -> None:
    assert crd_kinds(crd) == set()
