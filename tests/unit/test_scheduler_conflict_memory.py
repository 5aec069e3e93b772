"""A scheduling result that loses its compare-and-swap to a status-only write (the executor writes
binding status all the time) is decided again, although that write brings the scheduler no event:
seen in the stateful failover e2e, where an evicted binding then waited for its eviction task to
age out before it was placed anywhere."""

from __future__ import annotations

import asyncio
from typing import Any

from flotilla.aio.clock import RealClock
from flotilla.api import registry
from flotilla.api.v1 import work_pb2
from flotilla.scheduler.capacity import CapacityLedger
from flotilla.scheduler.framework import Framework
from flotilla.store import MemoryStore
from flotilla.store.informer import Informer
from services.scheduler.cluster_snapshots import ClusterView
from services.scheduler.reconciler import BindingScheduler, SchedulerOptions
from tests.scheduler_support import cluster
from tests.unit.test_scheduler_loop_memory import rb

KEY = "default/web-deployment"


class StaleView:
    """The binding informer as it stands just before a status write lands."""

    def __init__(self, binding: Any) -> None:
        self.binding = binding

    def get(self, key: str) -> Any:
        return self.binding if key == KEY else None


def scheduler_over(store: MemoryStore, clusters: Informer[Any], bindings: Any) -> BindingScheduler:
    """A scheduler of ResourceBindings reading `bindings` (anything with `get`) on a real clock."""
    clock = RealClock()
    ledger = CapacityLedger(clock, 5.0)
    return BindingScheduler(store, clock, registry.RESOURCE_BINDING, bindings,
                            ClusterView(clusters, clock, ledger), Framework.build("*", installed={}), ledger,
                            SchedulerOptions())


async def test_a_result_lost_to_a_status_write_is_decided_again(store: MemoryStore) -> None:
    await store.create(cluster("member1"))
    binding = await store.create(rb("web", {"clusterAffinity": {"clusterNames": ["member1"]}}))
    clusters = Informer(store, registry.CLUSTER)
    task = asyncio.create_task(clusters.run())
    await clusters.wait_synced()
    view = StaleView(binding)
    scheduler = scheduler_over(store, clusters, view)

    def status_only(obj: work_pb2.ResourceBinding) -> bool:
        obj.status.aggregated_status.add(cluster_name="member1", applied=True)
        return True

    await store.mutate(registry.RESOURCE_BINDING, "default", "web-deployment", status_only, status=True)
    result = await scheduler.reconcile(KEY)
    assert result is not None and result.requeue_after is not None, "the lost result is looked at again"
    # The next pass reads the newer version and places the binding.
    view.binding = await store.get(registry.RESOURCE_BINDING, "default", "web-deployment")
    await scheduler.reconcile(KEY)
    placed = await store.get(registry.RESOURCE_BINDING, "default", "web-deployment")
    assert [t.name for t in placed.spec.clusters] == ["member1"]
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_a_placement_and_its_scheduled_status_are_one_write(store: MemoryStore) -> None:
    """Issue 14: every write to a binding is an etcd write, and a failover reschedules many at once."""
    await store.create(cluster("member1"))
    binding = await store.create(rb("web", {"clusterAffinity": {"clusterNames": ["member1"]}}))
    clusters = Informer(store, registry.CLUSTER)
    task = asyncio.create_task(clusters.run())
    await clusters.wait_synced()
    scheduler = scheduler_over(store, clusters, StaleView(binding))
    await scheduler.reconcile(KEY)
    placed = await store.get(registry.RESOURCE_BINDING, "default", "web-deployment")
    assert [t.name for t in placed.spec.clusters] == ["member1"]
    assert placed.status.scheduler_observed_generation == placed.metadata.generation
    assert int(placed.metadata.resource_version) == int(binding.metadata.resource_version) + 1, "one write"
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)

