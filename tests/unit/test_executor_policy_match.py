"""Which policy claims a template: selectors, Karmada's precedence, sticky claims, preemption."""

from __future__ import annotations

from typing import Any

import pytest

from flotilla.api import codec
from flotilla.rules.resource_selection import Match, policy_match, selector_match
from services.executor.policy_match import (
    Claim,
    candidate_keys,
    choose_policy,
    claim_of,
    namespace_skipped,
    selector_index,
)


def template(name: str = "nginx", namespace: str = "default", kind: str = "Deployment",
             api_version: str = "apps/v1", **labels: str) -> Any:
    return codec.from_dict({"apiVersion": api_version, "kind": kind,
                            "metadata": {"name": name, "namespace": namespace, "labels": labels}})


def pp(name: str, *selectors: dict[str, Any], namespace: str = "default", priority: int | None = None,
       preemption: str = "", deleting: bool = False) -> Any:
    spec: dict[str, Any] = {"resourceSelectors": list(selectors)}
    if priority is not None:
        spec["priority"] = priority
    if preemption:
        spec["preemption"] = preemption
    meta: dict[str, Any] = {"name": name, "namespace": namespace,
                            "labels": {"propagationpolicy.karmada.io/permanent-id": f"{name}-id"}}
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return codec.from_dict({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
                            "metadata": meta, "spec": spec})


def cpp(name: str, *selectors: dict[str, Any], priority: int | None = None, preemption: str = "") -> Any:
    spec: dict[str, Any] = {"resourceSelectors": list(selectors)}
    if priority is not None:
        spec["priority"] = priority
    if preemption:
        spec["preemption"] = preemption
    return codec.from_dict({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy",
                            "metadata": {"name": name,
                                         "labels": {"clusterpropagationpolicy.karmada.io/permanent-id": f"{name}-id"}},
                            "spec": spec})


BY_NAME = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"}
BY_LABEL = {"apiVersion": "apps/v1", "kind": "Deployment", "labelSelector": {"matchLabels": {"app": "web"}}}
ALL = {"apiVersion": "apps/v1", "kind": "Deployment"}


@pytest.mark.parametrize(("selector", "expected"), [
    (BY_NAME, Match.NAME),
    (BY_LABEL, Match.LABEL_SELECTOR),
    (ALL, Match.ALL),
    ({**BY_NAME, "name": "other"}, Match.NONE),
    # A name wins over a label selector beside it, even one that does not match.
    ({**BY_NAME, "labelSelector": {"matchLabels": {"app": "nope"}}}, Match.NAME),
    ({**BY_LABEL, "labelSelector": {"matchLabels": {"app": "nope"}}}, Match.NONE),
    ({**ALL, "namespace": "default"}, Match.ALL),
    ({**ALL, "namespace": "prod"}, Match.NONE),
    ({**ALL, "apiVersion": "apps/v1beta1"}, Match.NONE),
    ({**ALL, "kind": "StatefulSet"}, Match.NONE),
    ({**ALL, "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}},
     Match.LABEL_SELECTOR),
])
def test_selector_match(selector: dict[str, Any], expected: Match) -> None:
    policy = pp("p", selector)
    assert selector_match(policy.spec.resource_selectors[0], template(app="web")) == expected


def test_policy_match_takes_the_best_selector_and_respects_namespace_and_deletion() -> None:
    assert policy_match(pp("p", ALL, BY_NAME, BY_LABEL), template(app="web")) == Match.NAME
    assert policy_match(pp("p", ALL, namespace="prod"), template()) == Match.NONE
    assert policy_match(cpp("c", ALL), template(namespace="prod")) == Match.ALL
    assert policy_match(pp("p", ALL, deleting=True), template()) == Match.NONE


CASES = [
    # (description, propagation policies, cluster policies, claim, preemption, chosen)
    ("higher explicit priority beats a name match",
     [pp("a-name", BY_NAME), pp("b-all", ALL, priority=5)], [], None, False, "b-all"),
    ("same priority: name beats label selector",
     [pp("a-label", BY_LABEL), pp("b-name", BY_NAME)], [], None, False, "b-name"),
    ("same priority: label selector beats match-all",
     [pp("a-all", ALL), pp("b-label", BY_LABEL)], [], None, False, "b-label"),
    ("same priority and match: smallest name",
     [pp("zeta", BY_NAME), pp("alpha", BY_NAME)], [], None, False, "alpha"),
    ("a PP beats a CPP of any priority",
     [pp("pp", ALL)], [cpp("cpp", BY_NAME, priority=100)], None, False, "pp"),
    ("a CPP when no PP matches", [pp("other", {**BY_NAME, "name": "x"})], [cpp("cpp", ALL)], None, False, "cpp"),
    ("a PP of another namespace is no match", [pp("pp", ALL, namespace="prod")], [], None, False, None),
    ("a deleting policy is no match", [pp("pp", ALL, deleting=True)], [], None, False, None),
    ("nothing matches", [pp("pp", {**ALL, "kind": "StatefulSet"})], [], None, False, None),
    ("a negative priority is still a match", [pp("low", ALL, priority=-3)], [], None, False, "low"),
    ("the claim sticks against a better policy",
     [pp("a-all", ALL), pp("b-name", BY_NAME, priority=9)], [],
     Claim("PropagationPolicy", "default", "a-all", "a-all-id"), False, "a-all"),
    ("a claiming policy that no longer matches loses the template",
     [pp("a-old", {**BY_NAME, "name": "x"}), pp("b-new", ALL)], [],
     Claim("PropagationPolicy", "default", "a-old", "a-old-id"), False, "b-new"),
    ("a claiming policy deleted and made again under its name is a new policy",
     [pp("a-all", ALL), pp("b-name", BY_NAME)], [],
     Claim("PropagationPolicy", "default", "a-all", "stale-id"), False, "b-name"),
    ("a claim by a CPP sticks against a later PP without preemption",
     [pp("pp", BY_NAME)], [cpp("cpp", ALL)], Claim("ClusterPropagationPolicy", "", "cpp", "cpp-id"), False, "cpp"),
    ("preemption: a PP with Always takes a CPP's template",
     [pp("pp", ALL, preemption="Always")], [cpp("cpp", ALL, priority=50)],
     Claim("ClusterPropagationPolicy", "", "cpp", "cpp-id"), True, "pp"),
    ("preemption: only with Always",
     [pp("pp", ALL)], [cpp("cpp", ALL)], Claim("ClusterPropagationPolicy", "", "cpp", "cpp-id"), True, "cpp"),
    ("preemption: a PP with Always and a higher priority takes a PP's template",
     [pp("a-low", BY_NAME), pp("b-high", ALL, priority=2, preemption="Always")], [],
     Claim("PropagationPolicy", "default", "a-low", "a-low-id"), True, "b-high"),
    ("preemption: not with an equal priority",
     [pp("a-claimed", ALL), pp("b-name", BY_NAME, preemption="Always")], [],
     Claim("PropagationPolicy", "default", "a-claimed", "a-claimed-id"), True, "a-claimed"),
    ("preemption: a CPP never takes a PP's template",
     [pp("pp", ALL)], [cpp("cpp", BY_NAME, priority=9, preemption="Always")],
     Claim("PropagationPolicy", "default", "pp", "pp-id"), True, "pp"),
    ("preemption: a CPP with Always and a higher priority takes a CPP's template",
     [], [cpp("a-low", ALL), cpp("b-high", ALL, priority=1, preemption="Always")],
     Claim("ClusterPropagationPolicy", "", "a-low", "a-low-id"), True, "b-high"),
]


@pytest.mark.parametrize(("propagation", "cluster", "claim", "preemption", "chosen"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_choose_policy(propagation: list[Any], cluster: list[Any], claim: Claim | None, preemption: bool,
                       chosen: str | None) -> None:
    policy = choose_policy(template(app="web"), propagation, cluster, claim, preemption)
    assert (policy.metadata.name if policy is not None else None) == chosen


@pytest.mark.parametrize(("namespace", "skipped"), [
    ("default", False), ("", False), ("kube-system", True), ("kube-public", True), ("kubernetes", False),
    ("karmada-system", True), ("karmada-cluster", True), ("karmada-es-member1", True), ("karmada-es-", False),
])
def test_namespace_skipped(namespace: str, skipped: bool) -> None:
    assert namespace_skipped(namespace) is skipped


def test_namespace_skip_patterns_match_whole_names() -> None:
    assert namespace_skipped("team-a", ("team-.*",))
    assert not namespace_skipped("my-team-a", ("team-.*",))


def test_claim_of_reads_the_binding_metadata() -> None:
    binding = codec.from_dict({
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
        "metadata": {"name": "b", "namespace": "default",
                     "labels": {"propagationpolicy.karmada.io/permanent-id": "id1"},
                     "annotations": {"propagationpolicy.karmada.io/name": "p",
                                     "propagationpolicy.karmada.io/namespace": "default"}}})
    assert claim_of(binding.metadata) == Claim("PropagationPolicy", "default", "p", "id1")
    assert claim_of(binding.metadata).key == "PropagationPolicy:default/p"
    del binding.metadata.annotations["propagationpolicy.karmada.io/name"]
    assert claim_of(binding.metadata) is None
    binding.metadata.annotations["clusterpropagationpolicy.karmada.io/name"] = "c"
    assert claim_of(binding.metadata) == Claim("ClusterPropagationPolicy", "", "c", "")


# Every kind of selector, in and out of the template's namespace, for the index tests below.
INDEXED_POLICIES = [
    pp("by-name", BY_NAME), pp("by-label", BY_LABEL), pp("all", ALL), pp("other-name", {**BY_NAME, "name": "x"}),
    pp("elsewhere", ALL, namespace="prod"), pp("other-kind", {**ALL, "kind": "StatefulSet"}),
    pp("other-version", {**ALL, "apiVersion": "apps/v1beta1"}), pp("two", {**BY_NAME, "name": "x"}, BY_LABEL),
    pp("deleting", ALL, deleting=True),
    cpp("c-name", BY_NAME), cpp("c-ns", {**ALL, "namespace": "default"}), cpp("c-prod", {**ALL, "namespace": "prod"}),
    cpp("c-other", {**BY_NAME, "name": "x"}),
    pp("other-label", {**BY_LABEL, "labelSelector": {"matchLabels": {"app": "db"}}}),
    pp("two-labels", {**BY_LABEL, "labelSelector": {"matchLabels": {"app": "web", "tier": "front"}}}),
    pp("expressions", {**ALL, "labelSelector": {"matchExpressions": [
        {"key": "app", "operator": "In", "values": ["web"]}]}}),
]


def _found(template_: Any, namespace: str) -> set[str]:
    """What an informer indexed by `selector_index` answers for the template's `candidate_keys`."""
    wanted = set(candidate_keys(template_, namespace))
    return {p.metadata.name for p in INDEXED_POLICIES if wanted & set(selector_index(p))}


@pytest.mark.parametrize("template_", [
    template(app="web"), template(), template(name="x"), template(namespace="prod"),
    template(kind="StatefulSet"), template(api_version="apps/v1beta1", app="web"),
], ids=["labelled", "plain", "other-name", "prod", "statefulset", "beta"])
def test_the_selector_index_finds_every_policy_that_can_select_a_template(template_: Any) -> None:
    namespace = template_.metadata.namespace
    matching = {p.metadata.name for p in INDEXED_POLICIES if policy_match(p, template_) != Match.NONE}
    found = _found(template_, namespace) | _found(template_, "")
    assert matching <= found
    # Only what shares its apiVersion, kind and namespace, and names it or nothing.
    assert ("other-kind" in found) is (template_.kind == "StatefulSet")
    assert ("other-version" in found) is (template_.api_version == "apps/v1beta1")
    assert ("elsewhere" in found) is (namespace == "prod")
    assert ("other-name" in found) is (template_.metadata.name == "x")
    assert "other-label" not in found
    # Found by one label it requires, though the template lacks the other.
    assert ("two-labels" in found) is (template_.metadata.labels.get("app") == "web" and template_.kind == "Deployment"
                                       and template_.api_version == "apps/v1" and namespace == "default")


@pytest.mark.parametrize(("propagation", "cluster", "claim", "preemption", "chosen"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_choosing_among_the_indexed_candidates_chooses_as_among_all(
        propagation: list[Any], cluster: list[Any], claim: Claim | None, preemption: bool, chosen: str | None) -> None:
    t = template(app="web")
    pp_keys, cpp_keys = set(candidate_keys(t, "default")), set(candidate_keys(t, ""))
    policy = choose_policy(t, [p for p in propagation if pp_keys & set(selector_index(p))],
                           [c for c in cluster if cpp_keys & set(selector_index(c))], claim, preemption)
    assert (policy.metadata.name if policy is not None else None) == chosen


def test_a_cluster_policy_is_indexed_without_a_namespace_and_a_selector_by_its_narrowest_part() -> None:
    assert selector_index(cpp("c", {**BY_NAME, "namespace": "default"})) == ["|apps/v1|Deployment|name:nginx"]
    assert selector_index(pp("p", ALL, BY_LABEL, BY_NAME, ALL)) == [
        "default|apps/v1|Deployment|", "default|apps/v1|Deployment|label:app=web",
        "default|apps/v1|Deployment|name:nginx"]
