"""The capacity estimate (Karmada's general estimator) and the reservation ledger that stops herding."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

import pytest

from flotilla.aio.clock import FakeClock
from flotilla.api import codec
from flotilla.api.v1 import work_pb2
from flotilla.scheduler import core
from flotilla.scheduler.capacity import (
    MAX_INT32,
    CapacityLedger,
    ClusterCapacity,
    Reserved,
    component_set,
    max_component_sets,
    max_replicas,
    replica_request,
)
from flotilla.scheduler.framework import Framework


def cluster(name: str, summary: dict[str, Any] | None) -> Any:
    data: dict[str, Any] = {
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": name},
        "status": {"apiEnablements": [{"groupVersion": "apps/v1",
                                       "resources": [{"name": "deployments", "kind": "Deployment"}]}]},
    }
    if summary is not None:
        data["status"]["resourceSummary"] = summary
    return codec.from_dict(data)


def request(**resources: str) -> Any:
    spec = work_pb2.ResourceBindingSpec()
    spec.replica_requirements.resource_request.update(resources)
    return replica_request(spec)


SUMMARY = {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
           "allocated": {"cpu": "2", "memory": "4Gi", "pods": "10"},
           "allocating": {"cpu": "500m", "pods": "2"}}


@pytest.mark.parametrize(("summary", "wanted", "expected"), [
    (None, {"cpu": "1"}, 0),                                     # nothing reported: nothing fits
    (SUMMARY, None, 98),                                        # no requirements: free pods
    (SUMMARY, {}, 98),
    (SUMMARY, {"cpu": "1"}, 5),                                 # 8 - 2 - 0.5 = 5.5 cpus
    (SUMMARY, {"cpu": "100m"}, 55),
    (SUMMARY, {"cpu": "100m", "memory": "1Gi"}, 12),            # memory is tighter
    (SUMMARY, {"cpu": "0"}, 98),                                # zero requests do not count
    (SUMMARY, {"nvidia.com/gpu": "1"}, 0),                       # a resource the cluster lacks
    ({"allocatable": {"cpu": "8", "pods": "12"}, "allocated": {"pods": "12"}}, {"cpu": "1"}, 0),
    ({"allocatable": {"cpu": "8"}}, {"cpu": "1"}, 0),            # no pods allocatable
    ({"allocatable": {"cpu": "1", "pods": "110"}, "allocated": {"cpu": "1"}}, {"cpu": "1m"}, 0),
])
def test_max_replicas(summary: dict[str, Any] | None, wanted: dict[str, str] | None, expected: int) -> None:
    capacity = ClusterCapacity.from_cluster(cluster("m1", summary))
    assert max_replicas(capacity, None if wanted is None else request(**wanted)) == expected


def components(*parts: tuple[int, dict[str, str]]) -> list[work_pb2.Component]:
    result = []
    for i, (replicas, wanted) in enumerate(parts):
        component = work_pb2.Component(name=f"c{i}", replicas=replicas)
        component.replica_requirements.resource_request.update(wanted)
        result.append(component)
    return result


# Karmada's GeneralEstimator.maxAvailableComponentSets: pods per set bound the sets, then each
# resource's free amount over what a whole set requests.
@pytest.mark.parametrize(("summary", "parts", "expected"), [
    (None, [(1, {"cpu": "1"})], 0),                                 # nothing reported
    (SUMMARY, [], 98),                                              # no components: free pods
    (SUMMARY, [(0, {"cpu": "1"})], 98),                             # a set of no pods
    (SUMMARY, [(1, {}), (2, {})], 32),                              # 98 pods // 3 per set
    (SUMMARY, [(1, {"cpu": "1"}), (2, {"cpu": "500m"})], 2),        # 2 cpus a set, 5.5 free
    (SUMMARY, [(1, {"cpu": "100m"}), (2, {"memory": "2Gi"})], 3),   # 4Gi a set, 12Gi free
    (SUMMARY, [(1, {"nvidia.com/gpu": "1"})], 0),                    # a resource the cluster lacks
    ({"allocatable": {"cpu": "8", "pods": "12"}, "allocated": {"pods": "12"}}, [(1, {"cpu": "1"})], 0),
])
def test_max_component_sets(summary: dict[str, Any] | None, parts: list[tuple[int, dict[str, str]]],
                            expected: int) -> None:
    capacity = ClusterCapacity.from_cluster(cluster("m1", summary))
    pods, per_set = component_set(components(*parts))
    assert max_component_sets(capacity, pods, per_set) == expected


def test_reservations_count_against_the_cluster() -> None:
    capacity = ClusterCapacity.from_cluster(cluster("m1", SUMMARY))
    wanted = request(cpu="1")
    assert max_replicas(capacity, wanted, Reserved(pods=2, amounts={"cpu": 2000})) == 3
    assert max_replicas(capacity, wanted, Reserved(pods=98)) == 0
    assert max_replicas(capacity, None, Reserved(pods=90)) == 8


def test_no_requirements_is_capped_at_max_int32() -> None:
    capacity = ClusterCapacity(True, 2**40, {})
    assert max_replicas(capacity, None) == MAX_INT32


async def test_ledger_holds_added_replicas_until_the_ttl() -> None:
    clock = FakeClock()
    ledger = CapacityLedger(clock, ttl=20)
    wanted = request(cpu="1")
    ledger.record("rb/a", {}, {"m1": 3, "m2": 2}, wanted)
    assert (ledger.reserved("m1").pods, ledger.reserved("m1").amounts) == (3, {"cpu": 3000})
    await clock.advance(10)
    # A failover of b onto m1: only what it adds is held, with its own clock.
    ledger.record("rb/b", {"m3": 4}, {"m1": 4, "m3": 0}, wanted)
    assert ledger.reserved("m1").pods == 7
    await clock.advance(10)
    assert ledger.reserved("m1").pods == 4
    assert ledger.reserved("m2").pods == 0
    await clock.advance(10)
    assert ledger.reserved("m1").pods == 0


def test_ledger_shrinks_forgets_and_undoes() -> None:
    ledger = CapacityLedger(FakeClock(), ttl=20)
    ledger.record("rb/a", {}, {"m1": 5}, None)
    before = ledger.record("rb/a", {"m1": 5}, {"m1": 2, "m2": 1}, None)
    assert ledger.reserved("m1").pods == 2
    assert ledger.reserved("m2").pods == 1
    ledger.undo("rb/a", before)
    assert (ledger.reserved("m1").pods, ledger.reserved("m2").pods) == (5, 0)
    ledger.forget("rb/a")
    assert ledger.reserved("m1").pods == 0


def binding(name: str, replicas: int, clusters: list[tuple[str, int]], evicted: str) -> Any:
    return codec.from_dict({
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": name},
                 "replicas": replicas, "replicaRequirements": {"resourceRequest": {"cpu": "1"}},
                 "placement": {"replicaScheduling": {"replicaSchedulingType": "Divided",
                                                     "replicaDivisionPreference": "Aggregated"}},
                 "clusters": [{"name": n, "replicas": r} for n, r in clusters],
                 "gracefulEvictionTasks": [{"fromCluster": evicted, "reason": "TaintUntolerated",
                                            "producer": "TaintManager"}]},
    })


@pytest.mark.parametrize("with_ledger", [False, True])
def test_a_storm_spreads_only_with_the_ledger(with_ledger: bool) -> None:
    """Karmada #6518: eight bindings of 5 replicas leave a failed cluster at once; the three
    survivors each have room for 20. Without the ledger every decision reads the same
    summary and all 40 replicas pile onto one cluster, twice what it holds."""
    room = {"allocatable": {"cpu": "20", "pods": "110"}}
    clusters = [cluster(n, room) for n in ("m1", "m2", "m3")] + [cluster("failed", room)]
    ledger = CapacityLedger(FakeClock(), ttl=math.inf)
    snapshot = core.Snapshot.of(clusters, datetime.now(UTC), ledger if with_ledger else None)
    framework = Framework.build("*", installed={})
    placed: dict[str, int] = {}
    for i in range(8):
        storm = binding(f"app{i}", 5, [], "failed")
        decision = core.schedule(storm, snapshot, framework)
        assert decision.ok and decision.clusters is not None
        ledger.record(f"rb/app{i}", {}, dict(decision.clusters), replica_request(storm.spec))
        for name, replicas in decision.clusters:
            placed[name] = placed.get(name, 0) + replicas
    if with_ledger:
        assert max(placed.values()) <= 20 and sum(placed.values()) == 40
    else:
        assert placed == {"m1": 40}
