"""Recovery from a mass failure through the running taint manager, in memory on a fake clock:
a cluster turning Ready is not evicted for the taint it still carries, and evictions held back
while everything was down are decided afresh, not fired, when clusters come back."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta

from flotilla.aio.clock import FakeClock, RealClock
from flotilla.api import registry
from flotilla.api.conditions import set_condition
from flotilla.api.v1 import cluster_pb2, work_pb2
from flotilla.store import MemoryStore
from tests.factories import make_cluster
from tests.taint_support import NOT_READY, running, taints_of
from tests.watching import Watch

CLUSTERS = ("member1", "member2")
BINDING = "ResourceBinding:default/web"


async def down_and_tainted(store: MemoryStore, clock: FakeClock, name: str) -> None:
    """A cluster down for an hour, with the NoExecute taint the taint manager gave it."""
    since = clock.now() - timedelta(hours=1)
    cluster = make_cluster(name)
    for effect in ("NoSchedule", "NoExecute"):
        taint = cluster.spec.taints.add(key=NOT_READY, effect=effect)
        taint.time_added.FromDatetime(since.replace(tzinfo=None))
    cluster = await store.create(cluster)
    set_condition(cluster.status.conditions, "Ready", "False", "ClusterNotReachable", "down", since)
    await store.update_status(cluster)


async def web(store: MemoryStore) -> work_pb2.ResourceBinding:
    """Placed on both clusters, tolerating nothing: any NoExecute taint evicts it at once."""
    b = work_pb2.ResourceBinding(api_version="work.karmada.io/v1alpha2", kind="ResourceBinding")
    b.metadata.name, b.metadata.namespace = "web", "default"
    b.spec.replicas = 2
    for name in CLUSTERS:
        b.spec.clusters.add(name=name, replicas=1)
    return await store.create(b)


async def recover(store: MemoryStore, clock: FakeClock, name: str) -> None:
    """What the status service writes: Ready, and nothing about taints."""

    def ready(obj: cluster_pb2.Cluster) -> None:
        set_condition(obj.status.conditions, "Ready", "True", "ClusterReady", "ok", clock.now())

    await store.mutate(registry.CLUSTER, "", name, ready, status=True)


async def until(predicate: Callable[[], bool], timeout: float = 15) -> None:
    # The evictor's inspection state changes without an event to await: poll it.
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.01)


def placed(binding: work_pb2.ResourceBinding) -> list[str]:
    return [t.name for t in binding.spec.clusters]


async def test_recovery_after_every_cluster_was_down_evicts_nothing(store: MemoryStore) -> None:
    clock = FakeClock(start=RealClock().now().replace(microsecond=0))
    for name in CLUSTERS:
        await down_and_tainted(store, clock, name)
    before = await web(store)
    async with running(store, clock) as manager:
        watch = Watch(manager.clusters)
        await until(lambda: any("every cluster is unhealthy" in h.reason for h in manager.state.held.get(BINDING, [])))

        # member1 turns Ready while its NoExecute taint is still on; member2 is still down.
        await recover(store, clock, "member1")
        await watch.until(lambda: taints_of(manager.clusters, "member1") == set())
        await until(lambda: [h.cluster for h in manager.state.held.get(BINDING, [])] == ["member2"]
                    and "mass failure" in manager.state.held[BINDING][0].reason)

        # member2 comes back within the grace: nothing is owed when the grace ends.
        await recover(store, clock, "member2")
        await watch.until(lambda: taints_of(manager.clusters, "member2") == set())
        await until(lambda: BINDING not in manager.state.held)
        await clock.advance(manager.protection.config.recovery_grace)
        binding = await store.get(registry.RESOURCE_BINDING, "default", "web")
        assert placed(binding) == placed(before) and not binding.spec.graceful_eviction_tasks
        assert binding.metadata.resource_version == before.metadata.resource_version


async def test_a_cluster_still_down_after_the_recovery_grace_is_evicted(store: MemoryStore) -> None:
    clock = FakeClock(start=RealClock().now().replace(microsecond=0))
    for name in CLUSTERS:
        await down_and_tainted(store, clock, name)
    await web(store)
    async with running(store, clock) as manager:
        await until(lambda: BINDING in manager.state.held)
        await recover(store, clock, "member1")
        await until(lambda: "mass failure" in "".join(h.reason for h in manager.state.held.get(BINDING, [])))
        await clock.advance(manager.protection.config.recovery_grace)
        bindings = Watch(manager.bindings["ResourceBinding"])
        await bindings.until(lambda: placed(manager.bindings["ResourceBinding"].get("default/web")) == ["member1"])
        assert taints_of(manager.clusters, "member1") == set()
