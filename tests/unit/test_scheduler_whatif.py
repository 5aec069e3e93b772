"""`whatif fail CLUSTER…`: evict every binding from the failed clusters and place them as a storm."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from flotilla.api import codec
from flotilla.api.v1 import policy_pb2
from flotilla.scheduler.framework import Framework
from flotilla.scheduler.whatif import evict, tolerates_forever, what_if

NOW = datetime(2026, 6, 1, tzinfo=UTC)
CLAIMED = {"propagationpolicy.karmada.io/permanent-id": "p"}


def cluster(name: str, cpu: str) -> Any:
    return codec.from_dict({
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": name},
        "status": {"apiEnablements": [{"groupVersion": "apps/v1",
                                       "resources": [{"name": "deployments", "kind": "Deployment"}]}],
                   "resourceSummary": {"allocatable": {"cpu": cpu, "pods": "110"}}},
    })


def binding(name: str, clusters: list[tuple[str, int]], placement: dict[str, Any], replicas: int = 4,
            labels: dict[str, str] | None = None) -> Any:
    return codec.from_dict({
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
        "metadata": {"name": name, "namespace": "default", "labels": CLAIMED if labels is None else labels},
        "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": name},
                 "replicas": replicas, "replicaRequirements": {"resourceRequest": {"cpu": "1"}},
                 "placement": placement, "clusters": [{"name": n, "replicas": r} for n, r in clusters]},
    })


AGGREGATED = {"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}}


def test_evict_moves_failed_clusters_to_tasks() -> None:
    evicted = evict(binding("a", [("m1", 1), ("m2", 3)], AGGREGATED), ["m2"])
    assert [(t.name, t.replicas) for t in evicted.spec.clusters] == [("m1", 1)]
    task = evicted.spec.graceful_eviction_tasks[0]
    assert (task.from_cluster, task.replicas, task.reason, task.producer) == ("m2", 3, "TaintUntolerated",
                                                                               "TaintManager")


def test_tolerating_failure_forever() -> None:
    forever = {"clusterTolerations": [{"key": "cluster.karmada.io/not-ready", "operator": "Exists",
                                       "effect": "NoExecute"}]}
    for_a_while = {"clusterTolerations": [{**forever["clusterTolerations"][0], "tolerationSeconds": 600}]}
    assert tolerates_forever(codec.parse_as(policy_pb2.Placement, forever))  # type: ignore[arg-type]
    assert not tolerates_forever(codec.parse_as(policy_pb2.Placement, for_a_while))  # type: ignore[arg-type]
    assert not tolerates_forever(policy_pb2.Placement())


def test_what_if_places_the_storm_with_capacity_held() -> None:
    clusters = [cluster("m1", "12"), cluster("m2", "6"), cluster("m3", "6")]
    bindings = [
        # Four aggregated workloads of 4 leave m1; m2 and m3 hold 6 each. Each decision holds its
        # replicas against the next: the third is split over what is left, the fourth cannot fit.
        binding("a", [("m1", 4)], AGGREGATED),
        binding("b", [("m1", 4)], AGGREGATED),
        binding("c", [("m1", 4)], AGGREGATED),
        binding("g", [("m1", 4)], AGGREGATED),
        binding("d", [("m2", 4)], AGGREGATED),                                     # not on m1
        binding("e", [("m1", 4)], {**AGGREGATED, "clusterTolerations": [{"operator": "Exists"}]}),
        binding("f", [("m1", 4)], AGGREGATED, labels={}),                          # not claimed
    ]
    report = what_if(bindings, clusters, ["m1"], Framework.build("*", installed={}), NOW, "default-scheduler")
    assert report.failed == ["m1"] and report.unaffected == 3
    outcomes = {f.binding.metadata.name: (f.decision.outcome.value, f.decision.clusters) for f in report.forecasts}
    assert outcomes == {
        "a": ("Success", [("m2", 4)]),
        "b": ("Success", [("m3", 4)]),
        "c": ("Success", [("m2", 2), ("m3", 2)]),
        "g": ("Unschedulable", None),
    }
    assert report.forecasts[3].decision.message == "Clusters available replicas 0 are not enough to schedule."


def test_a_failed_cluster_does_not_take_back_the_copy_it_held() -> None:
    # m1, the only cluster the workload may run on, fails: its copy would be the only one, and
    # a Ready m1 could take it back; failed, it cannot, so the forecast places it nowhere.
    ready = cluster("m1", "8")
    ready.status.conditions.add(type="Ready", status="True")
    only_m1 = binding("a", [("m1", 4)], {"clusterAffinity": {"clusterNames": ["m1"]}, **AGGREGATED})
    [forecast] = what_if([only_m1], [ready], ["m1"], Framework.build("*", installed={}), NOW,
                         "default-scheduler").forecasts
    assert (forecast.decision.outcome.value, forecast.decision.clusters) == ("NoClusterFit", [])
