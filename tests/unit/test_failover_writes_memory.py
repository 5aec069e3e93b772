"""Issue 14: a failover's history costs no write of its own. The eviction writes the record,
the scheduler's placement gives it its destinations, and the dropped task its recovery time,
each in the write that step makes anyway (each writer driven alone here, so none of them can
lean on the failover-history controller)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from flotilla.aio.clock import RealClock
from flotilla.api import registry
from flotilla.api.bindings import key_of
from flotilla.api.events import EventType
from flotilla.api.v1 import work_pb2
from flotilla.store import MemoryStore
from flotilla.store.base import copy_of
from flotilla.store.informer import Informer
from services.eviction.graceful import GracefulEvictionReconciler
from services.eviction.history_controller import FailoverHistoryReconciler
from services.executor.binding_status import aggregate_into
from tests.eviction_support import aggregated_for_this_generation
from tests.scheduler_support import cluster
from tests.taint_support import make_binding, manager, ready_cluster
from tests.unit.cache_fake import Cache
from tests.unit.test_eviction_graceful import binding as tasked_binding
from tests.unit.test_executor_aggregation import work
from tests.unit.test_scheduler_conflict_memory import scheduler_over
from tests.unit.test_scheduler_loop_memory import rb


async def test_the_eviction_write_carries_the_failover_record(store: MemoryStore) -> None:
    for name in ("member1", "member2"):
        await ready_cluster(store, name)
    await store.create(make_binding(1))
    versions: list[work_pb2.ResourceBinding] = []
    watcher = Informer(store, registry.RESOURCE_BINDING)

    def record(kind: EventType, obj: work_pb2.ResourceBinding, _old: object) -> None:
        versions.append(obj)

    watcher.add_handler(record)
    watching = asyncio.create_task(watcher.run())
    await watcher.wait_synced()
    running = asyncio.create_task(manager(store).run())

    def taint(obj: object) -> None:
        added = obj.spec.taints.add(key="dedicated", effect="NoExecute")  # type: ignore[attr-defined]
        added.time_added.FromDatetime(RealClock().now().replace(tzinfo=None, microsecond=0))

    await store.mutate(registry.CLUSTER, "", "member1", taint)
    try:
        async with asyncio.timeout(30):
            while not any("member1" not in [t.name for t in v.spec.clusters] for v in versions):
                await asyncio.sleep(0.01)
    finally:
        running.cancel()
        watching.cancel()
        await asyncio.gather(running, watching, return_exceptions=True)
    evicted = next(v for v in versions if "member1" not in [t.name for t in v.spec.clusters])
    [history] = evicted.status.failover_history
    assert history.from_cluster == "member1" and history.HasField("time")
    assert [t.name for t in history.clusters_before] == ["member1", "member2"]


async def test_the_placement_write_gives_the_record_its_destinations(store: MemoryStore) -> None:
    await store.create(cluster("member2"))
    pending = rb("web", {"clusterAffinity": {"clusterNames": ["member1", "member2"]}})
    pending.spec.graceful_eviction_tasks.add(from_cluster="member1", reason="TaintUntolerated",
                                             producer="TaintManager", purge_mode="Gracefully")
    record = pending.status.failover_history.add(from_cluster="member1", reason="TaintUntolerated")
    record.time.FromDatetime(RealClock().now().replace(tzinfo=None))
    pending = await store.create(pending)
    clusters = Informer(store, registry.CLUSTER)
    task = asyncio.create_task(clusters.run())
    await clusters.wait_synced()
    scheduler = scheduler_over(store, clusters, Cache([pending]))
    try:
        await scheduler.reconcile("default/web-deployment")
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    placed = await store.get(registry.RESOURCE_BINDING, "default", "web-deployment")
    assert int(placed.metadata.resource_version) == int(pending.metadata.resource_version) + 1, "one write"
    assert [t.name for t in placed.spec.clusters] == ["member2"]
    assert list(placed.status.failover_history[0].to_clusters) == ["member2"]


async def test_the_task_drop_write_records_the_recovery(store: MemoryStore) -> None:
    clock = RealClock()
    healthy = tasked_binding({"member2": 3}, ["member1"])
    healthy.spec.graceful_eviction_tasks[0].creation_timestamp.FromDatetime(
        (clock.now() - timedelta(seconds=5)).replace(tzinfo=None))
    record = healthy.status.failover_history.add(from_cluster="member1", to_clusters=["member2"],
                                                 reason="TaintUntolerated", producer="TaintManager")
    record.time.CopyFrom(healthy.spec.graceful_eviction_tasks[0].creation_timestamp)
    healthy.status.scheduler_observed_generation = 1
    healthy.metadata.generation = 1
    aggregated_for_this_generation(healthy)
    healthy.status.aggregated_status.add(cluster_name="member2", applied=True, health="Healthy")
    created = await store.create(healthy)
    assert created.metadata.generation == 1 and created.status.scheduler_observed_generation == 1
    reconciler = GracefulEvictionReconciler(store, clock, {"ResourceBinding": Cache([created])})  # type: ignore[dict-item]
    await reconciler.reconcile(key_of(created))
    dropped = await store.get(registry.RESOURCE_BINDING, "default", "nginx-deployment")
    assert not dropped.spec.graceful_eviction_tasks
    assert int(dropped.metadata.resource_version) == int(created.metadata.resource_version) + 1, "one write"
    assert dropped.status.failover_history[0].HasField("recovered_time")


async def test_a_task_drop_the_scheduler_has_nothing_to_add_to_is_the_last_write(store: MemoryStore) -> None:
    """A Duplicated binding evicted from member1 onto its backup term: dropping the task cannot
    bring member1 back (the term it is settled on does not have it), so the drop records the
    new generation as the scheduler would, and the scheduler's own pass on it writes nothing."""
    failed = cluster("member1")
    failed.spec.taints.add(key="cluster.karmada.io/not-ready", effect="NoExecute")
    await store.create(failed)
    await store.create(cluster("member2"))
    pending = rb("web", {"clusterAffinities": [{"affinityName": "primary", "clusterNames": ["member1"]},
                                               {"affinityName": "backup", "clusterNames": ["member2"]}],
                         "replicaScheduling": {"replicaSchedulingType": "Duplicated"}})
    task = pending.spec.graceful_eviction_tasks.add(from_cluster="member1", reason="TaintUntolerated",
                                                    producer="TaintManager", purge_mode="Gracefully")
    task.creation_timestamp.FromDatetime((RealClock().now() - timedelta(seconds=5)).replace(tzinfo=None))
    pending = await store.create(pending)
    clusters = Informer(store, registry.CLUSTER)
    running = asyncio.create_task(clusters.run())
    await clusters.wait_synced()
    try:
        await scheduler_over(store, clusters, Cache([pending])).reconcile("default/web-deployment")

        def healthy(obj: work_pb2.ResourceBinding) -> bool:
            aggregated_for_this_generation(obj)
            obj.status.aggregated_status.add(cluster_name="member2", applied=True, health="Healthy")
            return True

        placed = await store.mutate(registry.RESOURCE_BINDING, "default", "web-deployment", healthy, status=True)
        assert [t.name for t in placed.spec.clusters] == ["member2"]
        assert placed.status.scheduler_observing_affinity_name == "backup"
        graceful = GracefulEvictionReconciler(store, RealClock(), {"ResourceBinding": Cache([placed])},  # type: ignore[dict-item]
                                              clusters=clusters)
        await graceful.reconcile(key_of(placed))
        dropped = await store.get(registry.RESOURCE_BINDING, "default", "web-deployment")
        assert not dropped.spec.graceful_eviction_tasks
        assert dropped.status.scheduler_observed_generation == dropped.metadata.generation
        await scheduler_over(store, clusters, Cache([dropped])).reconcile("default/web-deployment")
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
    after = await store.get(registry.RESOURCE_BINDING, "default", "web-deployment")
    assert after.metadata.resource_version == dropped.metadata.resource_version, "the scheduler wrote nothing"
    assert [t.name for t in after.spec.clusters] == ["member2"]


async def test_the_recovery_is_left_to_the_task_drop_that_carries_it(store: MemoryStore) -> None:
    """The history controller and the graceful eviction controller see the new placement turn
    Healthy at once; the drop writes the recovery time with the tasks, so the history controller
    does not write it first (a second write), unless the task stays."""
    clock = RealClock()
    for keep in (False, True):
        healthy = tasked_binding({"member2": 3}, ["member1"], **({"suppressDeletion": True} if keep else {}))
        healthy.metadata.name = f"kept-{keep}".lower()
        healthy.spec.graceful_eviction_tasks[0].creation_timestamp.FromDatetime(
            (clock.now() - timedelta(seconds=5)).replace(tzinfo=None))
        record = healthy.status.failover_history.add(from_cluster="member1", to_clusters=["member2"],
                                                     reason="TaintUntolerated", producer="TaintManager")
        record.time.CopyFrom(healthy.spec.graceful_eviction_tasks[0].creation_timestamp)
        healthy.status.scheduler_observed_generation = healthy.metadata.generation = 1
        aggregated_for_this_generation(healthy)
        healthy.status.aggregated_status.add(cluster_name="member2", applied=True, health="Healthy")
        created = await store.create(healthy)
        history = FailoverHistoryReconciler(store, clock, {"ResourceBinding": Cache([created])})  # type: ignore[dict-item]
        await history.reconcile(key_of(created))
        after = await store.get(registry.RESOURCE_BINDING, "default", created.metadata.name)
        assert after.status.failover_history[0].HasField("recovered_time") is keep


async def test_a_task_drop_the_executor_has_nothing_to_add_to_is_the_last_binding_write(store: MemoryStore) -> None:
    """After the drop, member1's Work is still there until the binding controller deletes it, and
    the executor aggregates the new generation from the Works: the drop's write already has what
    that aggregation finds (member1's item gone, FullyApplied for the new generation)."""
    clock = RealClock()
    found = [work(cluster, status={"replicas": 3, "readyReplicas": 3}) for cluster in ("member1", "member2")]
    pending = tasked_binding({"member2": 3}, ["member1"])
    pending.spec.graceful_eviction_tasks[0].creation_timestamp.FromDatetime(
        (clock.now() - timedelta(seconds=5)).replace(tzinfo=None))
    pending.metadata.generation = 1
    pending.status.scheduler_observed_generation = 1
    assert aggregate_into(pending, found, clock.now())
    assert [i.cluster_name for i in pending.status.aggregated_status] == ["member1", "member2"]
    created = await store.create(pending)
    graceful = GracefulEvictionReconciler(store, clock, {"ResourceBinding": Cache([created])})  # type: ignore[dict-item]
    await graceful.reconcile(key_of(created))
    after = await store.get(registry.RESOURCE_BINDING, "default", "nginx-deployment")
    assert not after.spec.graceful_eviction_tasks and after.metadata.generation == 2
    assert [i.cluster_name for i in after.status.aggregated_status] == ["member2"]
    assert not aggregate_into(copy_of(after), found, clock.now()), "the executor has nothing to write"
