"""NoExecute eviction against a real etcd: a storm of bindings, and a restart in the middle of it."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from datetime import timedelta

from flotilla.api import registry
from flotilla.api.conditions import set_condition
from flotilla.api.v1 import work_pb2
from flotilla.runtime.clock import RealClock
from flotilla.store import Store
from flotilla.store.informer import EventType, Informer
from services.taint_manager.cluster_taints import TaintConfig
from services.taint_manager.evictor import EvictorConfig
from services.taint_manager.manager import TaintManager
from services.taint_manager.protection import EvictionProtection, ProtectionConfig
from tests.factories import make_cluster

BINDINGS = 200


async def ready_cluster(store: Store, name: str) -> None:
    cluster = make_cluster(name)
    cluster = await store.create(cluster)
    set_condition(cluster.status.conditions, "Ready", "True", "ClusterReady", "ok", RealClock().now())
    await store.update_status(cluster)


def make_binding(i: int) -> work_pb2.ResourceBinding:
    b = work_pb2.ResourceBinding(api_version="work.karmada.io/v1alpha2", kind="ResourceBinding")
    b.metadata.name, b.metadata.namespace = f"app{i:03d}-deployment", "default"
    b.spec.replicas = 3
    b.spec.clusters.add(name="member1", replicas=1)
    b.spec.clusters.add(name="member2", replicas=2)
    if i % 10 == 0:
        # A tenth tolerate the taint for an hour: they must stay (and not be written).
        b.spec.placement.cluster_tolerations.add(key="dedicated", operator="Exists", effect="NoExecute",
                                                 toleration_seconds=3600)
    return b


def manager(store: Store) -> TaintManager:
    clock = RealClock()
    return TaintManager(store, clock, EvictionProtection(clock, ProtectionConfig()),
                        TaintConfig(failover_gate=True, eviction_timeout=timedelta(minutes=5)), EvictorConfig())


async def test_storm_is_evicted_once_each_across_a_restart(store: Store) -> None:
    for name in ("member1", "member2"):
        await ready_cluster(store, name)
    await asyncio.gather(*(store.create(make_binding(i)) for i in range(BINDINGS)))
    writes: Counter[str] = Counter()
    evicted, quarter = asyncio.Event(), asyncio.Event()
    expected = BINDINGS - BINDINGS // 10

    watcher = Informer(store, registry.RESOURCE_BINDING)

    def count(kind: EventType, obj: work_pb2.ResourceBinding, old: object) -> None:
        if kind == EventType.MODIFIED:
            writes[obj.metadata.name] += 1
            if len(writes) >= expected // 4:
                quarter.set()
            if len(writes) >= expected:
                evicted.set()

    watcher.add_handler(count)
    watch_task = asyncio.create_task(watcher.run())
    await watcher.wait_synced()

    first = asyncio.create_task(manager(store).run())

    def taint(cluster: object) -> None:
        added = cluster.spec.taints.add(key="dedicated", value="x", effect="NoExecute")  # type: ignore[attr-defined]
        added.time_added.FromDatetime(RealClock().now().replace(tzinfo=None, microsecond=0))

    started = time.monotonic()
    await store.mutate(registry.CLUSTER, "", "member1", taint)
    # Kill the first instance part-way through the storm.
    async with asyncio.timeout(30):
        await quarter.wait()
    first.cancel()
    await asyncio.gather(first, return_exceptions=True)
    killed_at = len(writes)

    second = asyncio.create_task(manager(store).run())
    async with asyncio.timeout(60):
        await evicted.wait()
    elapsed = time.monotonic() - started
    # Give a duplicate write, were there one, the time to show itself.
    await asyncio.sleep(0.3)
    second.cancel()
    watch_task.cancel()
    await asyncio.gather(second, watch_task, return_exceptions=True)

    print(f"\nevicted {expected} bindings in {elapsed:.2f}s ({expected / elapsed:.0f}/s), "
          f"restart after {killed_at}")
    assert killed_at < expected, "the restart must happen mid-storm"
    assert set(writes.values()) == {1}, "every binding is written exactly once"
    assert len(writes) == expected
    for b in (await store.list(registry.RESOURCE_BINDING, "default")).items:
        if int(b.metadata.name[3:6]) % 10 == 0:
            assert [t.name for t in b.spec.clusters] == ["member1", "member2"]
            continue
        assert [(t.name, t.replicas) for t in b.spec.clusters] == [("member2", 2)]
        (task,) = b.spec.graceful_eviction_tasks
        assert (task.from_cluster, task.replicas, task.producer, task.reason) == (
            "member1", 1, "TaintManager", "TaintUntolerated")
