"""A cluster whose stored value never decoded is not a missing cluster to the scheduler: a
binding that could go to it waits, rather than being placed (or moved) without it, and is
placed once the cluster reads again."""

from __future__ import annotations

import asyncio

from flotilla.api import keys, registry
from flotilla.store import MemoryStore
from flotilla.store.base import payload
from flotilla.store.informer import Informer
from services.scheduler.reconciler import UNREADABLE_CLUSTER_REQUEUE_SECONDS
from tests.scheduler_support import cluster
from tests.unit.test_scheduler_conflict_memory import KEY, StaleView, scheduler_over
from tests.unit.test_scheduler_loop_memory import rb

MEMBER2_KEY = keys.etcd_key(registry.CLUSTER.resource, "", "member2")


async def test_a_binding_waits_for_a_cluster_that_does_not_decode(store: MemoryStore) -> None:
    await store.create(cluster("member1"))
    store.put_raw(MEMBER2_KEY, b"\xff\xfe not a protobuf")
    binding = await store.create(rb("web", {"clusterAffinity": {"clusterNames": ["member1", "member2"]}}))
    clusters = Informer(store, registry.CLUSTER)
    task = asyncio.create_task(clusters.run())
    try:
        await clusters.wait_synced()
        scheduler = scheduler_over(store, clusters, StaleView(binding))
        result = await scheduler.reconcile(KEY)
        assert result is not None and result.requeue_after == UNREADABLE_CLUSTER_REQUEUE_SECONDS
        waiting = await store.get(registry.RESOURCE_BINDING, "default", "web-deployment")
        assert list(waiting.spec.clusters) == [], "not placed without member2"

        good = cluster("member2")
        store.put_raw(MEMBER2_KEY, payload(good))
        async with asyncio.timeout(10):
            while "member2" not in clusters.keys():
                await asyncio.sleep(0.01)
        scheduler.clusters.changed()  # as SchedulerLoop does on every cluster event
        assert await scheduler.reconcile(KEY) is None
        placed = await store.get(registry.RESOURCE_BINDING, "default", "web-deployment")
        assert sorted(t.name for t in placed.spec.clusters) == ["member1", "member2"]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
