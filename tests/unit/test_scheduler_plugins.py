"""The built-in plugins, cluster affinity matching, and the framework that runs plugins."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from flotilla.api import codec
from flotilla.api.v1 import policy_pb2, work_pb2
from flotilla.scheduler import core
from flotilla.scheduler.framework import Framework, fit_error_message
from flotilla.scheduler.framework import Unfit as U
from flotilla.scheduler.plugin_api import (
    SUCCESS,
    AffinityMatcher,
    BindingInfo,
    ClusterInfo,
    Code,
    PluginError,
    Result,
    label_selector_matches,
    select_plugins,
)
from flotilla.scheduler.plugins import BUILTIN
from flotilla.scheduler.plugins.api_enablement import APIEnablement
from flotilla.scheduler.plugins.cluster_affinity import ClusterAffinity
from flotilla.scheduler.plugins.cluster_eviction import ClusterEviction
from flotilla.scheduler.plugins.cluster_locality import ClusterLocality
from flotilla.scheduler.plugins.spread_constraint import SpreadConstraint
from flotilla.scheduler.plugins.taint_toleration import TaintToleration

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def info(name: str, labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None,
         apis: bool = True, ready: bool = False, **spec: Any) -> ClusterInfo:
    status: dict[str, Any] = {"apiEnablements": [{"groupVersion": "apps/v1",
                                                  "resources": [{"name": "deployments", "kind": "Deployment"}]}]
                              } if apis else {}
    if ready:
        status["conditions"] = [{"type": "Ready", "status": "True"}]
    cluster = codec.from_dict({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                               "metadata": {"name": name, "labels": labels or {}},
                               "spec": {**spec, "taints": taints or []}, "status": status})
    return ClusterInfo.from_cluster(cluster)  # type: ignore[arg-type]


def unit(placement: dict[str, Any] | None = None, targets: dict[str, int] | None = None,
         evicting: frozenset[str] = frozenset(), blocked: frozenset[str] = frozenset(),
         affinity: Any = None, returning: dict[str, int] | None = None) -> BindingInfo:
    parsed = codec.parse_as(policy_pb2.Placement, placement or {})
    assert isinstance(parsed, policy_pb2.Placement)
    return BindingInfo(kind="ResourceBinding", namespace="default", name="web-deployment",
                       spec=work_pb2.ResourceBindingSpec(), status=work_pb2.ResourceBindingStatus(),
                       placement=parsed, resource=("apps/v1", "Deployment"), targets=targets or {},
                       evicting=evicting, blocked=blocked, now=NOW,
                       affinity=AffinityMatcher(affinity) if affinity is not None else None,
                       returning=returning or {})


def affinity(data: dict[str, Any]) -> policy_pb2.ClusterAffinity:
    parsed = codec.parse_as(policy_pb2.ClusterAffinity, data)
    assert isinstance(parsed, policy_pb2.ClusterAffinity)
    return parsed


AWS = info("m1", {"env": "prod", "tier": "gold"}, provider="aws", region="us-east-1", zones=["a", "b"])
BARE = info("m2")


@pytest.mark.parametrize(("term", "cluster", "expected"), [
    ({}, AWS, True),
    ({"clusterNames": ["m1"]}, AWS, True),
    ({"clusterNames": ["m9"]}, AWS, False),
    ({"exclude": ["m1"]}, AWS, False),
    ({"clusterNames": ["m1"], "exclude": ["m1"]}, AWS, False),
    ({"labelSelector": {"matchLabels": {"env": "prod"}}}, AWS, True),
    ({"labelSelector": {"matchLabels": {"env": "dev"}}}, AWS, False),
    ({"labelSelector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold", "x"]}]}}, AWS, True),
    ({"labelSelector": {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["gold"]}]}}, BARE, True),
    ({"labelSelector": {"matchExpressions": [{"key": "tier", "operator": "Exists"}]}}, BARE, False),
    ({"labelSelector": {"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}}, BARE, True),
    ({"labelSelector": {"matchExpressions": [{"key": "tier", "operator": "Gt", "values": ["1"]}]}}, AWS, False),
    ({"fieldSelector": {"matchExpressions": [{"key": "provider", "operator": "In", "values": ["aws"]}]}}, AWS, True),
    ({"fieldSelector": {"matchExpressions": [{"key": "region", "operator": "NotIn", "values": ["us-east-1"]}]}},
     AWS, False),
    # A cluster without the field matches NotIn, as a label selector does.
    ({"fieldSelector": {"matchExpressions": [{"key": "region", "operator": "NotIn", "values": ["x"]}]}}, BARE, True),
    # zone In: every zone of the cluster must be listed.
    ({"fieldSelector": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}}, AWS, True),
    ({"fieldSelector": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}}, AWS, False),
    ({"fieldSelector": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}}, BARE, False),
    ({"fieldSelector": {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["b"]}]}}, AWS, False),
    ({"fieldSelector": {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["b"]}]}}, BARE, True),
])
def test_affinity_matcher(term: dict[str, Any], cluster: ClusterInfo, expected: bool) -> None:
    assert AffinityMatcher(affinity(term)).matches(cluster) is expected
    assert AffinityMatcher.of(affinity(term)).matches(cluster) is expected


def test_matchers_are_shared_and_remember_verdicts_per_cluster_version() -> None:
    term = affinity({"clusterNames": ["m1"]})
    assert AffinityMatcher.of(term) is AffinityMatcher.of(affinity({"clusterNames": ["m1"]}))
    clusters = (AWS, BARE)
    matcher = AffinityMatcher.of(term)
    assert matcher.select(clusters) is matcher.select(clusters) == [AWS]
    renamed = info("m1", {"env": "dev"})
    assert matcher.matches(renamed)


def test_label_selector_matches() -> None:
    selector = codec.parse_as(policy_pb2.ClusterAffinity, {"labelSelector": {"matchLabels": {"a": "1"}}})
    assert label_selector_matches(selector.label_selector, {"a": "1", "b": "2"})  # type: ignore[attr-defined]
    assert not label_selector_matches(selector.label_selector, {})  # type: ignore[attr-defined]


TAINTED = info("t", taints=[{"key": "maintenance", "value": "planned", "effect": "NoSchedule"}])
EXECUTE = info("x", taints=[{"key": "cluster.karmada.io/not-ready", "effect": "NoExecute"}])
PREFER = info("p", taints=[{"key": "soft", "effect": "PreferNoSchedule"}])
# m1, evicted from, holding the only copy (`returning`), as it recovers.
RECOVERED = info("m1", ready=True)
STILL_DOWN = info("m1")
STILL_TAINTED = info("m1", ready=True, taints=[{"key": "cluster.karmada.io/not-ready", "effect": "NoExecute"}])
MANUAL_TAINT = info("m1", ready=True, taints=[{"key": "maintenance", "effect": "NoExecute"}])
ONLY_COPY = {"evicting": frozenset({"m1"}), "returning": {"m1": 2}}


@pytest.mark.parametrize(("plugin", "binding", "cluster", "reason"), [
    (APIEnablement(), unit(), AWS, None),
    (APIEnablement(), unit(), info("n", apis=False), "cluster(s) did not have the API resource"),
    (APIEnablement(), unit(targets={"n": 1}), info("n", apis=False), None),
    (TaintToleration(), unit(), TAINTED, "cluster(s) had untolerated taint {maintenance=planned:NoSchedule}"),
    (TaintToleration(), unit(), EXECUTE, "cluster(s) had untolerated taint {cluster.karmada.io/not-ready:NoExecute}"),
    (TaintToleration(), unit(), PREFER, None),
    (TaintToleration(), unit(targets={"t": 1}), TAINTED, None),
    (TaintToleration(), unit({"clusterTolerations": [{"key": "maintenance", "operator": "Exists"}]}), TAINTED, None),
    (TaintToleration(), unit({"clusterTolerations": [{"key": "maintenance", "value": "x"}]}), TAINTED,
     "cluster(s) had untolerated taint {maintenance=planned:NoSchedule}"),
    (ClusterAffinity(), unit(), BARE, None),
    (ClusterAffinity(), unit(affinity=affinity({"clusterNames": ["m1"]})), BARE,
     "cluster(s) did not match the placement cluster affinity constraint"),
    (ClusterAffinity(), unit(targets={"m2": 1}, affinity=affinity({"clusterNames": ["m1"]})), BARE,
     "cluster(s) did not match the placement cluster affinity constraint"),
    (SpreadConstraint(), unit({"spreadConstraints": [{"spreadByField": "region"}]}), BARE,
     "cluster(s) did not have region property"),
    (SpreadConstraint(), unit({"spreadConstraints": [{"spreadByField": "provider"}]}), BARE,
     "cluster(s) did not have provider property"),
    (SpreadConstraint(), unit({"spreadConstraints": [{"spreadByField": "zone"}]}), BARE,
     "cluster(s) did not have zones property"),
    (SpreadConstraint(), unit({"spreadConstraints": [{"spreadByField": "zone"}]}), AWS, None),
    (ClusterEviction(), unit(evicting=frozenset({"m1"})), AWS, "cluster(s) is in the process of eviction"),
    (ClusterEviction(), unit(blocked=frozenset({"m1"})), AWS,
     "cluster(s) recently failed this application (blockPredecessorSeconds)"),
    (ClusterEviction(), unit(evicting=frozenset({"m9"})), AWS, None),
    # A task holding the only copy keeps its cluster out until that cluster can take it again.
    (ClusterEviction(), unit(**ONLY_COPY), RECOVERED, None),
    (ClusterEviction(), unit(evicting=frozenset({"m1"})), RECOVERED, "cluster(s) is in the process of eviction"),
    (ClusterEviction(), unit(**ONLY_COPY), STILL_DOWN, "cluster(s) is in the process of eviction"),
    (ClusterEviction(), unit(**ONLY_COPY), replace(RECOVERED, deleting=True),
     "cluster(s) is in the process of eviction"),
    (ClusterEviction(), unit(**ONLY_COPY), STILL_TAINTED, "cluster(s) is in the process of eviction"),
    (ClusterEviction(), unit(**ONLY_COPY), MANUAL_TAINT, "cluster(s) is in the process of eviction"),
    (ClusterEviction(), unit({"clusterTolerations": [{"key": "maintenance", "operator": "Exists",
                                                      "tolerationSeconds": 60}]}, **ONLY_COPY), MANUAL_TAINT,
     "cluster(s) is in the process of eviction"),
    (ClusterEviction(), unit({"clusterTolerations": [{"key": "maintenance", "operator": "Exists"}]}, **ONLY_COPY),
     MANUAL_TAINT, None),
    # The toleration in use is the first that matches, as the taint manager reads it: it would evict again.
    (ClusterEviction(), unit({"clusterTolerations": [
        {"key": "maintenance", "operator": "Exists", "tolerationSeconds": 60}, {"operator": "Exists"}]}, **ONLY_COPY),
     MANUAL_TAINT,
     "cluster(s) is in the process of eviction"),
    (ClusterEviction(), unit(blocked=frozenset({"m1"}), **ONLY_COPY), RECOVERED,
     "cluster(s) recently failed this application (blockPredecessorSeconds)"),
])
def test_filters(plugin: Any, binding: BindingInfo, cluster: ClusterInfo, reason: str | None) -> None:
    result = plugin.filter(binding, cluster)
    if reason is None:
        assert result.ok
    else:
        assert (result.code, result.reason()) == (Code.UNSCHEDULABLE, reason)


def test_scores() -> None:
    assert ClusterLocality().score(unit(targets={"m1": 2}), AWS) == 100
    assert ClusterLocality().score(unit(targets={"m1": 2}), BARE) == 0
    assert ClusterLocality().score(unit(), AWS) == 0
    assert ClusterAffinity().score(unit(), AWS) == 0


def test_prefilter_gives_what_the_filter_gives() -> None:
    clusters = (AWS, BARE, TAINTED)
    binding = unit(affinity=affinity({"labelSelector": {"matchLabels": {"env": "prod"}}}))
    narrowed = ClusterAffinity().prefilter(binding, clusters)
    assert narrowed is not None
    passing, result = narrowed
    assert list(passing) == [c for c in clusters if ClusterAffinity().filter(binding, c).ok]
    assert result.reason() == "cluster(s) did not match the placement cluster affinity constraint"


@pytest.mark.parametrize(("selection", "expected"), [
    ("*", ["A", "B", "C"]),
    ("*,-B", ["A", "C"]),
    ("-B,*", ["A", "C"]),
    ("C,A", ["A", "C"]),
    ("", []),
    (["*", "-A", "-C"], ["B"]),
])
def test_plugin_selection(selection: str | list[str], expected: list[str]) -> None:
    assert select_plugins(["A", "B", "C"], selection) == expected


def test_unknown_plugin_names_are_errors() -> None:
    with pytest.raises(PluginError, match="unknown scheduler plugin"):
        select_plugins(["A"], "*,-Typo")


def test_framework_build() -> None:
    assert Framework.build("*", installed={}).names == list(BUILTIN)
    assert "ClusterLocality" not in Framework.build("*,-ClusterLocality", installed={}).names
    with pytest.raises(PluginError, match="clash with built-in"):
        Framework.build("*", installed={"TaintToleration": TaintToleration})

    class Nameless:
        name = "Other"

        def filter(self, binding: BindingInfo, cluster: ClusterInfo) -> Result:
            return SUCCESS

    with pytest.raises(PluginError, match="is named 'Other'"):
        Framework.build("*", installed={"Mine": Nameless})


def test_framework_records_the_first_failing_filter_per_cluster() -> None:
    framework = Framework.build("*", installed={})
    binding = unit({"spreadConstraints": [{"spreadByField": "region"}]},
                   affinity=affinity({"exclude": ["x"]}), evicting=frozenset({"t"}))
    feasible, unfit = framework.filter(binding, (AWS, BARE, TAINTED, EXECUTE, info("n", apis=False, region="r")))
    assert [c.name for c in feasible] == ["m1"]
    assert sorted(unfit) == [
        U("m2", "SpreadConstraint", "cluster(s) did not have region property"),
        U("n", "APIEnablement", "cluster(s) did not have the API resource"),
        U("t", "ClusterEviction", "cluster(s) is in the process of eviction"),
        U("x", "ClusterAffinity", "cluster(s) did not match the placement cluster affinity constraint"),
    ]


def test_fit_error_message_counts_reasons() -> None:
    unfit = [U("a", "P", "cluster(s) z"), U("b", "P", "cluster(s) a"), U("c", "P", "cluster(s) z")]
    assert fit_error_message(3, unfit) == "0/3 clusters are available: 1 cluster(s) a, 2 cluster(s) z."


def test_a_plugin_error_fails_the_scheduling() -> None:
    class Broken:
        name = "Broken"

        def filter(self, binding: BindingInfo, cluster: ClusterInfo) -> Result:
            return Result.error("estimator unavailable")

    class Raising:
        name = "Raising"

        def score(self, binding: BindingInfo, cluster: ClusterInfo) -> int:
            raise RuntimeError("boom")

    obj = codec.from_dict({"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
                           "metadata": {"name": "b", "namespace": "default"},
                           "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "b"}}})
    snapshot = core.Snapshot.of([AWS.cluster], NOW)
    for plugin, message in ((Broken, "plugin Broken failed on cluster m1: estimator unavailable"),
                            (Raising, "plugin Raising failed to score: boom")):
        framework = Framework.build(f"*,{plugin.name}", installed={plugin.name: plugin})
        decision = core.schedule(obj, snapshot, framework)  # type: ignore[arg-type]
        assert (decision.outcome, decision.message, decision.clusters) == (
            core.Outcome.SCHEDULER_ERROR, message, None)
