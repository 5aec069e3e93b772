"""Issue 14: a Duplicated binding is decided again on every change of a cluster it may use and of
itself (docs/karmada-rules.md §8.1). A decision that repeats the placement is not written: no new
lastScheduledTime (a write to every such binding each time a member's taints moved), only a
generation the scheduler had not recorded yet. An explicit reschedule is still stamped."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from flotilla.aio.clock import FakeClock
from flotilla.api import registry
from flotilla.api.v1 import work_pb2
from flotilla.scheduler.capacity import CapacityLedger
from flotilla.scheduler.framework import Framework
from flotilla.store import MemoryStore
from flotilla.store.informer import Informer
from services.scheduler.cluster_snapshots import ClusterView
from services.scheduler.reconciler import BindingScheduler, SchedulerOptions
from tests.scheduler_support import cluster
from tests.unit.cache_fake import Cache
from tests.unit.test_scheduler_loop_memory import rb

KEY = "default/web-deployment"
DUPLICATED = {"clusterAffinity": {"clusterNames": ["member1"]},
              "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}


@pytest.fixture
async def clusters(store: MemoryStore) -> AsyncIterator[Informer[object]]:
    await store.create(cluster("member1"))
    informer: Informer[object] = Informer(store, registry.CLUSTER)
    task = asyncio.create_task(informer.run())
    await informer.wait_synced()
    yield informer
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def pass_over(store: MemoryStore, clusters: Informer[object], clock: FakeClock,
                    options: SchedulerOptions | None = None) -> work_pb2.ResourceBinding:
    """One scheduling pass on the binding as stored, forced as a cluster change forces it."""
    ledger = CapacityLedger(clock, 5.0)
    current = await store.get(registry.RESOURCE_BINDING, "default", "web-deployment")
    scheduler = BindingScheduler(store, clock, registry.RESOURCE_BINDING, Cache([current]),  # type: ignore[arg-type]
                                 ClusterView(clusters, clock, ledger),  # type: ignore[arg-type]
                                 Framework.build("*", installed={}), ledger, options or SchedulerOptions())
    scheduler.force(KEY)
    await scheduler.reconcile(KEY)
    return await store.get(registry.RESOURCE_BINDING, "default", "web-deployment")


async def test_a_repeated_decision_is_not_written(store: MemoryStore, clusters: Informer[object]) -> None:
    clock = FakeClock()
    await store.create(rb("web", DUPLICATED))
    placed = await pass_over(store, clusters, clock)
    assert [t.name for t in placed.spec.clusters] == ["member1"] and placed.status.HasField("last_scheduled_time")
    await clock.advance(30)
    again = await pass_over(store, clusters, clock)
    assert again.metadata.resource_version == placed.metadata.resource_version, "no write"
    assert again.status.last_scheduled_time == placed.status.last_scheduled_time


async def test_a_repeated_decision_at_a_new_generation_records_only_the_generation(
        store: MemoryStore, clusters: Informer[object]) -> None:
    clock = FakeClock()
    await store.create(rb("web", DUPLICATED))
    placed = await pass_over(store, clusters, clock)

    def unrelated(obj: work_pb2.ResourceBinding) -> bool:
        obj.spec.propagate_deps = True
        return True

    changed = await store.mutate(registry.RESOURCE_BINDING, "default", "web-deployment", unrelated)
    await clock.advance(30)
    again = await pass_over(store, clusters, clock)
    assert int(again.metadata.resource_version) == int(changed.metadata.resource_version) + 1, "one write"
    assert again.status.scheduler_observed_generation == again.metadata.generation == placed.metadata.generation + 1
    assert [c.observed_generation for c in again.status.conditions if c.type == "Scheduled"] == [
        again.metadata.generation]
    assert again.status.last_scheduled_time == placed.status.last_scheduled_time


async def test_an_explicit_reschedule_to_the_same_place_is_stamped(store: MemoryStore,
                                                                  clusters: Informer[object]) -> None:
    """Else rescheduleTriggeredAt stays after lastScheduledTime, and it is asked for forever."""
    clock = FakeClock()
    await store.create(rb("web", DUPLICATED))
    await pass_over(store, clusters, clock)
    await clock.advance(30)

    def reschedule(obj: work_pb2.ResourceBinding) -> bool:
        obj.spec.reschedule_triggered_at.FromDatetime(clock.now().replace(tzinfo=None))
        return True

    await store.mutate(registry.RESOURCE_BINDING, "default", "web-deployment", reschedule)
    await clock.advance(1)
    again = await pass_over(store, clusters, clock)
    assert again.status.last_scheduled_time.ToNanoseconds() >= again.spec.reschedule_triggered_at.ToNanoseconds()


async def test_a_multi_component_workload_records_its_components_on_its_cluster_and_their_change(
        store: MemoryStore, clusters: Informer[object]) -> None:
    """MultiplePodTemplatesScheduling: each target says what it runs of each component (Karmada's
    TargetCluster.components); a change of the components is a new placement, not a repeat."""
    clock = FakeClock()
    options = SchedulerOptions(multiple_pod_templates=True)
    binding = rb("web", {"clusterAffinity": {"clusterNames": ["member1"]},
                         "spreadConstraints": [{"spreadByField": "cluster", "minGroups": 1, "maxGroups": 1}]})
    binding.spec.replicas = 0
    binding.spec.ClearField("replica_requirements")
    binding.spec.components.add(name="jobmanager", replicas=1)
    binding.spec.components.add(name="taskmanager", replicas=2)
    await store.create(binding)
    placed = await pass_over(store, clusters, clock, options)
    assert [(t.name, [(c.name, c.replicas) for c in t.components]) for t in placed.spec.clusters] == [
        ("member1", [("jobmanager", 1), ("taskmanager", 2)])]

    def scale(obj: work_pb2.ResourceBinding) -> bool:
        obj.spec.components[1].replicas = 4
        return True

    await store.mutate(registry.RESOURCE_BINDING, "default", "web-deployment", scale)
    await clock.advance(30)
    again = await pass_over(store, clusters, clock, options)
    assert [(c.name, c.replicas) for c in again.spec.clusters[0].components] == [("jobmanager", 1), ("taskmanager", 4)]
    await clock.advance(30)
    repeat = await pass_over(store, clusters, clock, options)
    assert repeat.metadata.resource_version == again.metadata.resource_version, "no write"
