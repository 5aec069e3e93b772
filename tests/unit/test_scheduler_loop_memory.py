"""The scheduling loop in-process on a MemoryStore: ClusterResourceBindings take the same path as
ResourceBindings, "nothing fits" clears the result, failed schedules (capacity, nothing fits, a
failover whose backup term cannot take the binding yet) are retried, a cluster's readiness or
APIs changing brings failed bindings back at once, cluster changes bring Duplicated bindings to
new clusters but leave Divided ones where they are.

(The scheduler on a real etcd: tests/integration/test_scheduler_service.py.)"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from flotilla.aio.clock import RealClock
from flotilla.api import codec, registry
from flotilla.api.conditions import get_condition
from flotilla.scheduler.framework import Framework
from flotilla.store import MemoryStore
from flotilla.store.events import EventQueue
from services.scheduler.controllers import SchedulerLoop
from services.scheduler.reconciler import SchedulerOptions
from tests.scheduler_support import Bindings, cluster, placed, scheduled, targets

CLAIMED = {"propagationpolicy.karmada.io/permanent-id": "p-1"}


@pytest.fixture
async def loop(store: MemoryStore) -> AsyncIterator[SchedulerLoop]:
    events = EventQueue(store, "scheduler", qps=1000)
    scheduler = SchedulerLoop(store, RealClock(), Framework.build("*", installed={}),
                              SchedulerOptions(retry_after=0.02, workers=4), events)
    tasks = [asyncio.create_task(scheduler.run()), asyncio.create_task(events.run())]
    yield scheduler
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


@pytest.fixture
async def rbs(store: MemoryStore) -> AsyncIterator[Bindings]:
    view = Bindings(store, registry.RESOURCE_BINDING)
    task = asyncio.create_task(view.informer.run())
    await view.informer.wait_synced()
    yield view
    task.cancel()


def rb(name: str, placement: dict[str, Any], replicas: int = 2, cpu: str = "1") -> Any:
    return codec.from_dict({
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
        "metadata": {"name": f"{name}-deployment", "namespace": "default", "labels": CLAIMED},
        "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": name},
                 "replicas": replicas, "replicaRequirements": {"resourceRequest": {"cpu": cpu}},
                 "placement": placement, "schedulerName": "default-scheduler"},
    })


async def test_cluster_resource_binding_and_its_events(store: MemoryStore, loop: SchedulerLoop) -> None:
    await store.create(cluster("member1"))
    await store.create(cluster("member2", env="dev"))
    crbs = Bindings(store, registry.CLUSTER_RESOURCE_BINDING)
    events = Bindings(store, registry.EVENT)
    watching = [asyncio.create_task(view.informer.run()) for view in (crbs, events)]
    try:
        await crbs.informer.wait_synced()
        await store.create(codec.from_dict({
            "apiVersion": "work.karmada.io/v1alpha2", "kind": "ClusterResourceBinding",
            "metadata": {"name": "team-a-namespace",
                         "labels": {"clusterpropagationpolicy.karmada.io/permanent-id": "c-1"}},
            "spec": {"resource": {"apiVersion": "v1", "kind": "Namespace", "name": "team-a"},
                     "placement": {"clusterAffinity": {"labelSelector": {"matchLabels": {"env": "prod"}}}}},
        }))
        await crbs.wait("team-a-namespace", placed(("member1", 0)))
        # On the binding and on its resource template, as Karmada records them. (The loop may have
        # seen the binding before its cluster view caught up: a failed attempt may come first.)
        for kind, name in (("ClusterResourceBinding", "team-a-namespace"), ("Namespace", "team-a")):
            event = await events.wait_any(lambda e, k=kind, n=name: (e.involved_object.kind, e.involved_object.name,
                                                                     e.reason) == (k, n, "ScheduleBindingSucceed"))
            assert (event.reason, event.message) == ("ScheduleBindingSucceed",
                                                     "Binding has been scheduled successfully. Result: {member1:0}")
    finally:
        for task in watching:
            task.cancel()


async def test_nothing_fits_clears_the_result(store: MemoryStore, loop: SchedulerLoop, rbs: Bindings) -> None:
    await store.create(cluster("member1"))
    await store.create(rb("web", {"clusterAffinity": {"clusterNames": ["member1"]}}))
    await rbs.wait("default/web-deployment", placed(("member1", 2)))

    def retarget(obj: Any) -> bool:
        obj.spec.placement.cluster_affinity.cluster_names[:] = ["member9"]
        return True

    await store.mutate(registry.RESOURCE_BINDING, "default", "web-deployment", retarget)
    binding = await rbs.wait("default/web-deployment", scheduled("NoClusterFit"))
    assert targets(binding) == []
    condition = get_condition(binding.status.conditions, "Scheduled")
    assert condition is not None and condition.status == "False"
    assert condition.message == ("0/1 clusters are available: "
                                 "1 cluster(s) did not match the placement cluster affinity constraint.")
    # A failed schedule is not an observed one: nothing may treat the empty result as settled.
    assert binding.status.scheduler_observed_generation < binding.metadata.generation


async def test_capacity_shortfall_is_retried(store: MemoryStore, loop: SchedulerLoop, rbs: Bindings) -> None:
    await store.create(cluster("member1", cpu="3"))
    aggregated = {"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}}
    await store.create(rb("big", aggregated, replicas=4))
    binding = await rbs.wait("default/big-deployment", scheduled("Unschedulable"))
    assert targets(binding) == []
    assert get_condition(binding.status.conditions, "Scheduled").message == (  # type: ignore[union-attr]
        "Clusters available replicas 2 are not enough to schedule.")

    # The room appears in a status update, which is no scheduling event: the retry finds it.
    def grow(obj: Any) -> bool:
        obj.status.resource_summary.allocatable["cpu"] = "8"
        return True

    await store.mutate(registry.CLUSTER, "", "member1", grow, status=True)
    await rbs.wait("default/big-deployment", placed(("member1", 4)))


async def test_cluster_changes_move_duplicated_bindings_only(store: MemoryStore, loop: SchedulerLoop,
                                                             rbs: Bindings) -> None:
    await store.create(cluster("member1"))
    await store.create(cluster("member2", env="dev"))
    prod = {"labelSelector": {"matchLabels": {"env": "prod"}}}
    duplicated = {"replicaSchedulingType": "Duplicated"}
    await store.create(rb("dup", {"clusterAffinity": prod, "replicaScheduling": duplicated}))
    weighted = {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"}
    await store.create(rb("div", {"clusterAffinity": prod, "replicaScheduling": weighted}))
    await rbs.wait("default/dup-deployment", placed(("member1", 2)))
    divided = await rbs.wait("default/div-deployment", placed(("member1", 2)))

    def promote(obj: Any) -> bool:
        obj.metadata.labels["env"] = "prod"
        return True

    await store.mutate(registry.CLUSTER, "", "member2", promote)
    await rbs.wait("default/dup-deployment", placed(("member1", 2), ("member2", 2)))
    # Divided workloads do not move because a cluster appeared (docs/karmada-rules.md §8.1).
    assert targets(rbs.informer.get("default/div-deployment")) == [("member1", 2)]
    assert rbs.informer.get("default/div-deployment").metadata.generation == divided.metadata.generation



FAILOVER = {"clusterAffinities": [{"affinityName": "primary", "clusterNames": ["member1"]},
                                  {"affinityName": "backup", "clusterNames": ["member2"]}]}


async def evict_from_member1(store: MemoryStore) -> None:
    """What the taint manager does when member1 fails: taint it, take it out, leave a task."""
    def fail(obj: Any) -> bool:
        obj.spec.taints.add(key="cluster.karmada.io/not-ready", effect="NoExecute")
        return True

    await store.mutate(registry.CLUSTER, "", "member1", fail)

    def evict(obj: Any) -> bool:
        del obj.spec.clusters[:]
        obj.spec.graceful_eviction_tasks.add(from_cluster="member1", reason="TaintUntolerated", producer="test")
        return True

    await store.mutate(registry.RESOURCE_BINDING, "default", "web-deployment", evict)


def serve_deployments(obj: Any) -> bool:
    obj.status.api_enablements.add(group_version="apps/v1").resources.add(name="deployments", kind="Deployment")
    return True


def more_room(obj: Any) -> bool:
    obj.status.resource_summary.allocatable["cpu"] = "8"
    return True


async def fail_over_to_a_backup_not_able_yet(store: MemoryStore, rbs: Bindings, strategy: dict[str, str],
                                             backup: dict[str, str]) -> None:
    """member1 fails while member2, the backup term's cluster, cannot take the binding yet."""
    await store.create(cluster("member1"))
    member2 = cluster("member2", **backup)
    if not backup:
        del member2.status.api_enablements[:]
    await store.create(member2)
    await store.create(rb("web", {**FAILOVER, "replicaScheduling": strategy}, replicas=4))
    await rbs.wait("default/web-deployment", placed(("member1", 4)))
    await evict_from_member1(store)
    binding = await rbs.wait("default/web-deployment", scheduled("NoClusterFit"))
    message = get_condition(binding.status.conditions, "Scheduled").message  # type: ignore[union-attr]
    assert 'clusterAffinities term "backup"' in message


DUPLICATED = {"replicaSchedulingType": "Duplicated"}


@pytest.mark.parametrize(("strategy", "backup", "recover"), [
    # The backup's discovery timed out: it reported no APIs until its next collection.
    (DUPLICATED, {}, serve_deployments),
    # The backup is short of room until its next resource summary.
    ({"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}, {"cpu": "2"}, more_room),
], ids=["api-enablements", "capacity"])
async def test_a_failover_the_backup_cannot_take_yet_is_retried(
        store: MemoryStore, loop: SchedulerLoop, rbs: Bindings, strategy: dict[str, str], backup: dict[str, str],
        recover: Any) -> None:
    await fail_over_to_a_backup_not_able_yet(store, rbs, strategy, backup)
    # A status update is no scheduling event: the retry of the failed binding finds the backup able.
    await store.mutate(registry.CLUSTER, "", "member2", recover, status=True)
    await rbs.wait("default/web-deployment", placed(("member2", 4)))


@pytest.fixture
async def patient_loop(store: MemoryStore) -> AsyncIterator[SchedulerLoop]:
    scheduler = SchedulerLoop(store, RealClock(), Framework.build("*", installed={}),
                              SchedulerOptions(retry_initial=3600, retry_after=3600, workers=4))
    task = asyncio.create_task(scheduler.run())
    yield scheduler
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_a_cluster_serving_the_api_again_takes_failed_bindings_at_once(
        store: MemoryStore, patient_loop: SchedulerLoop, rbs: Bindings) -> None:
    await fail_over_to_a_backup_not_able_yet(store, rbs, DUPLICATED, {})
    # Not the next retry (an hour away) but the cluster's status change brings the binding back.
    await store.mutate(registry.CLUSTER, "", "member2", serve_deployments, status=True)
    await rbs.wait("default/web-deployment", placed(("member2", 4)))


async def test_a_failure_that_wrote_no_spec_is_retried(store: MemoryStore, loop: SchedulerLoop,
                                                       rbs: Bindings) -> None:
    await store.create(cluster("member1"))
    await store.create(cluster("member2"))
    member3 = cluster("member3")
    del member3.status.api_enablements[:]
    await store.create(member3)
    spread = {"clusterAffinity": {"labelSelector": {"matchLabels": {"env": "prod"}}}, "replicaScheduling": DUPLICATED,
              "spreadConstraints": [{"spreadByField": "cluster", "minGroups": 2, "maxGroups": 2}]}
    await store.create(rb("web", spread))
    await rbs.wait("default/web-deployment", placed(("member1", 2), ("member2", 2)))

    def demote(obj: Any) -> bool:
        obj.metadata.labels["env"] = "dev"
        return True

    # Too few clusters for the spread: Unschedulable, spec.clusters left as they are (the
    # generation this scheduler placed the binding at stays, and must not pass for settled).
    await store.mutate(registry.CLUSTER, "", "member2", demote)
    await rbs.wait("default/web-deployment", scheduled("Unschedulable"))
    await store.mutate(registry.CLUSTER, "", "member3", serve_deployments, status=True)
    await rbs.wait("default/web-deployment", placed(("member1", 2), ("member3", 2)))
