"""core.schedule beyond the case files: clusterAffinities fallback rules, overflow terms,
empty-workload propagation, eviction history, and what no cluster at all means."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from flotilla.api import codec
from flotilla.scheduler import core
from flotilla.scheduler.framework import Framework
from flotilla.scheduler.placement import returning_clusters

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
FRAMEWORK = Framework.build("*", installed={})
DYNAMIC = {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
           "weightPreference": {"dynamicWeight": "AvailableReplicas"}}


def cluster(name: str, cpu: str = "10", deleting: bool = False, ready: bool = False, used: str = "0",
            **labels: str) -> Any:
    data: dict[str, Any] = {
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": name, "labels": labels},
        "status": {"apiEnablements": [{"groupVersion": "apps/v1",
                                       "resources": [{"name": "deployments", "kind": "Deployment"}]}],
                   "resourceSummary": {"allocatable": {"cpu": cpu, "pods": "110"}, "allocated": {"cpu": used}},
                   "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }
    if deleting:
        data["metadata"]["deletionTimestamp"] = "2026-06-01T11:00:00Z"
    return codec.from_dict(data)


def binding(placement: dict[str, Any], replicas: int = 6, status: dict[str, Any] | None = None,
            **spec: Any) -> Any:
    return codec.from_dict({
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
        "metadata": {"name": "web-deployment", "namespace": "default"},
        "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "web"},
                 "replicas": replicas, "replicaRequirements": {"resourceRequest": {"cpu": "1"}},
                 "placement": placement, **spec},
        "status": status or {},
    })


def schedule(obj: Any, *clusters: Any, **options: Any) -> core.Decision:
    return core.schedule(obj, core.Snapshot.of(clusters, NOW), FRAMEWORK, **options)


TERMS = [{"affinityName": "small", "labelSelector": {"matchLabels": {"size": "small"}}},
         {"affinityName": "big", "labelSelector": {"matchLabels": {"size": "big"}}}]


def test_next_term_when_the_first_cannot_hold_the_replicas() -> None:
    decision = schedule(binding({"clusterAffinities": TERMS, "replicaScheduling": DYNAMIC}),
                        cluster("s1", "2", size="small"), cluster("b1", "20", size="big"))
    assert (decision.outcome, decision.clusters, decision.affinity_name) == (core.Outcome.SUCCESS, [("b1", 6)], "big")
    assert [(a.affinity_name, a.outcome) for a in decision.attempts] == [("small", core.Outcome.UNSCHEDULABLE)]


def test_every_term_failing_keeps_the_result_unless_nothing_fits() -> None:
    obj = binding({"clusterAffinities": TERMS, "replicaScheduling": DYNAMIC}, replicas=50)
    decision = schedule(obj, cluster("s1", "2", size="small"), cluster("b1", "20", size="big"))
    # The first failure was "not enough room", not "nothing fits": spec.clusters stays.
    assert (decision.outcome, decision.clusters, decision.affinity_name) == (core.Outcome.UNSCHEDULABLE, None, None)
    assert len(decision.attempts) == 2


def test_terms_are_not_revisited_upwards_unless_rescheduled() -> None:
    settled = {"schedulerObservingAffinityName": "big", "lastScheduledTime": "2026-06-01T10:00:00Z"}
    placement = {"clusterAffinities": TERMS, "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}
    clusters = (cluster("s1", size="small"), cluster("b1", size="big"))
    assert schedule(binding(placement, status=settled), *clusters).affinity_name == "big"
    rescheduled = binding(placement, status=settled, rescheduleTriggeredAt="2026-06-01T11:00:00Z")
    assert schedule(rescheduled, *clusters).affinity_name == "small"


def test_overflow_terms_take_what_the_primary_cannot_hold() -> None:
    term = {"affinityName": "primary", "clusterNames": ["p1"],
            "overflowAffinities": [{"affinityName": "burst", "clusterNames": ["o1"]}]}
    decision = schedule(binding({"clusterAffinities": [term], "replicaScheduling": DYNAMIC}),
                        cluster("p1", "4"), cluster("o1", "10"), cluster("x1", "100"))
    assert decision.clusters == [("p1", 4), ("o1", 2)]
    assert [(u.cluster, u.plugin) for u in decision.unfit] == [("x1", "ClusterAffinity")]


def test_empty_workload_propagation_keeps_clusters_with_zero_replicas() -> None:
    weights = {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
               "weightPreference": {"staticWeightList": [{"targetCluster": {"clusterNames": ["a"]}, "weight": 1}]}}
    obj = binding({"replicaScheduling": weights}, replicas=2)
    assert schedule(obj, cluster("a"), cluster("b")).clusters == [("a", 2)]
    assert schedule(obj, cluster("a"), cluster("b"), empty_workload_propagation=True).clusters == [("a", 2), ("b", 0)]


def test_eviction_history_blocks_for_block_predecessor_seconds() -> None:
    def evicted(seconds_ago: int) -> Any:
        when = (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
        return binding({}, failover={"application": {"blockPredecessorSeconds": 60}},
                       activeEvictionHistory=[{"clusterName": "a", "creationTimestamp": when}])

    assert schedule(evicted(59), cluster("a"), cluster("b")).clusters == [("b", 6)]
    assert schedule(evicted(61), cluster("a"), cluster("b")).clusters == [("a", 6), ("b", 6)]


def test_deleting_clusters_are_not_candidates() -> None:
    decision = schedule(binding({}), cluster("a", deleting=True), cluster("b"))
    assert decision.clusters == [("b", 6)] and decision.unfit == []
    decision = schedule(binding({}), cluster("a", deleting=True))
    assert (decision.outcome, decision.message, decision.clusters) == (
        core.Outcome.SCHEDULER_ERROR, "no clusters available to schedule", None)


FAILOVER_TERMS = [{"affinityName": "primary", "clusterNames": ["m1"]},
                  {"affinityName": "backup", "clusterNames": ["m2"]}]


def evicted_from_m1(placement: dict[str, Any]) -> Any:
    """A binding settled on its primary term whose cluster m1 is being evicted from."""
    return binding(placement, status={"schedulerObservingAffinityName": "primary"},
                   gracefulEvictionTasks=[{"fromCluster": "m1", "reason": "TaintUntolerated", "producer": "t"}])


def without_apis(obj: Any) -> Any:
    del obj.status.api_enablements[:]
    return obj


def test_every_failed_term_is_in_the_message() -> None:
    # The backup's cluster reported no APIs (a discovery that timed out): both terms fail, and
    # the message says why the backup did not take the binding, not only the primary.
    duplicated = {"clusterAffinities": FAILOVER_TERMS, "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}
    decision = schedule(evicted_from_m1(duplicated), cluster("m1"), without_apis(cluster("m2")), cluster("m3"))
    assert (decision.outcome, decision.clusters) == (core.Outcome.NO_CLUSTER_FIT, [])
    assert decision.message == (
        'clusterAffinities term "primary": 0/3 clusters are available: 1 cluster(s) is in the process of eviction, '
        '2 cluster(s) did not match the placement cluster affinity constraint.; '
        'clusterAffinities term "backup": 0/3 clusters are available: 1 cluster(s) did not have the API resource, '
        '2 cluster(s) did not match the placement cluster affinity constraint.')
    assert schedule(evicted_from_m1(duplicated), cluster("m1"), cluster("m2"), cluster("m3")).clusters == [("m2", 6)]


def test_a_backup_short_of_room_is_named_in_the_message() -> None:
    decision = schedule(evicted_from_m1({"clusterAffinities": FAILOVER_TERMS, "replicaScheduling": DYNAMIC}),
                        cluster("m1"), cluster("m2", "2"))
    assert decision.outcome is core.Outcome.NO_CLUSTER_FIT
    assert decision.message.endswith(
        'clusterAffinities term "backup": Clusters available replicas 2 are not enough to schedule.')


def only_copy_on_m1(placement: dict[str, Any], **task: Any) -> Any:
    """A binding evicted from m1, its only cluster, with nothing placed since: m1's copy (6
    replicas) is the only one running."""
    return binding(placement, gracefulEvictionTasks=[
        {"fromCluster": "m1", "replicas": 6, "purgeMode": "Gracefully", "reason": "TaintUntolerated",
         "producer": "TaintManager", **task}])


def test_the_only_copy_comes_home_once_its_cluster_can_take_it() -> None:
    only_m1 = {"clusterAffinity": {"clusterNames": ["m1"]}, "replicaScheduling": DYNAMIC}
    down = schedule(only_copy_on_m1(only_m1), cluster("m1", "6", used="6"))
    assert (down.outcome, down.clusters) == (core.Outcome.NO_CLUSTER_FIT, [])
    # Recovered, m1 takes the workload back, though its copy already fills it: the replicas
    # it runs need no new room.
    back = schedule(only_copy_on_m1(only_m1), cluster("m1", "6", ready=True, used="6"))
    assert (back.outcome, back.clusters) == (core.Outcome.SUCCESS, [("m1", 6)])
    # A Directly task's copy is gone (or going): it ages out, and m1 stays out meanwhile.
    directly = schedule(only_copy_on_m1(only_m1, purgeMode="Directly"), cluster("m1", "6", ready=True))
    assert directly.outcome is core.Outcome.NO_CLUSTER_FIT


def test_a_task_beside_a_placement_still_keeps_its_cluster_out() -> None:
    evicted = only_copy_on_m1({"replicaScheduling": DYNAMIC})
    evicted.spec.clusters.add(name="m2", replicas=6)
    assert schedule(evicted, cluster("m1", ready=True), cluster("m2", ready=True)).clusters == [("m2", 6)]


def test_an_application_failover_copy_comes_home_once_healthy_there() -> None:
    def evicted(health: str) -> Any:
        obj = only_copy_on_m1({"clusterAffinity": {"clusterNames": ["m1"]}}, reason="ApplicationFailure",
                              producer="ApplicationFailover")
        obj.status.aggregated_status.add(cluster_name="m1", health=health)
        return obj

    assert schedule(evicted("Unhealthy"), cluster("m1", ready=True)).outcome is core.Outcome.NO_CLUSTER_FIT
    assert schedule(evicted("Unknown"), cluster("m1", ready=True)).outcome is core.Outcome.NO_CLUSTER_FIT
    assert schedule(evicted("Healthy"), cluster("m1", ready=True)).clusters == [("m1", 6)]


@pytest.mark.parametrize(("clusters", "tasks", "health", "expected"), [
    ([], [("m1", "Gracefully", "TaintManager", 2)], {}, {"m1": 2}),
    ([], [("m1", "Never", "ApplicationFailover", 2)], {"m1": "Healthy"}, {"m1": 2}),
    ([], [("m1", "Gracefully", "ApplicationFailover", 2)], {"m1": "Unhealthy"}, {}),
    ([], [("m1", "Directly", "TaintManager", 2)], {}, {}),
    ([], [("m1", "Immediately", "TaintManager", 2)], {}, {}),
    ([], [("m1", "Gracefully", "TaintManager", 1), ("m2", "Gracefully", "TaintManager", 1)], {},
     {"m1": 1, "m2": 1}),
    ([("m2", 2)], [("m1", "Gracefully", "TaintManager", 2)], {}, {}),
])
def test_returning_clusters(clusters: list[tuple[str, int]], tasks: list[tuple[str, str, str, int]],
                            health: dict[str, str], expected: dict[str, int]) -> None:
    obj = binding({}, clusters=[{"name": n, "replicas": r} for n, r in clusters],
                  gracefulEvictionTasks=[{"fromCluster": c, "purgeMode": m, "producer": p, "replicas": r}
                                         for c, m, p, r in tasks],
                  status={"aggregatedStatus": [{"clusterName": c, "health": h} for c, h in health.items()]})
    assert returning_clusters(obj.spec, obj.status) == expected
