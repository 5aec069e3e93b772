"""NoExecute eviction in memory: a storm of bindings, and a restart of the taint manager
in the middle of it. (The taint manager on a real etcd: tests/integration/test_taint_manager_timeline.py.)"""

from __future__ import annotations

import asyncio
import time
from collections import Counter

from flotilla.aio.clock import RealClock
from flotilla.api import registry
from flotilla.api.events import EventType
from flotilla.api.v1 import work_pb2
from flotilla.store import MemoryStore
from flotilla.store.informer import Informer
from tests.taint_support import make_binding, manager, ready_cluster

# More than on etcd (200): in memory the storm outruns the few loop turns a restart takes.
BINDINGS = 1000
SENTINEL = "zz-sentinel"


async def test_storm_is_evicted_once_each_across_a_restart(store: MemoryStore) -> None:
    for name in ("member1", "member2"):
        await ready_cluster(store, name)
    await asyncio.gather(*(store.create(make_binding(i)) for i in range(BINDINGS)))
    writes: Counter[str] = Counter()
    evicted, quarter, barrier = asyncio.Event(), asyncio.Event(), asyncio.Event()
    expected = BINDINGS - BINDINGS // 10

    watcher = Informer(store, registry.RESOURCE_BINDING)

    def count(kind: EventType, obj: work_pb2.ResourceBinding, old: object) -> None:
        if obj.metadata.name == SENTINEL:
            barrier.set()
            return
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
    second.cancel()
    await asyncio.gather(second, return_exceptions=True)
    # A duplicate write, were there one, was made before the manager stopped: it has reached
    # the watcher once a write made after it has (a watch delivers in revision order).
    sentinel = work_pb2.ResourceBinding(api_version="work.karmada.io/v1alpha2", kind="ResourceBinding")
    sentinel.metadata.name, sentinel.metadata.namespace = SENTINEL, "default"
    await store.create(sentinel)
    async with asyncio.timeout(10):
        await barrier.wait()
    watch_task.cancel()
    await asyncio.gather(watch_task, return_exceptions=True)

    print(f"\nevicted {expected} bindings in {elapsed:.2f}s ({expected / elapsed:.0f}/s), "
          f"restart after {killed_at}")
    assert killed_at < expected, "the restart must happen mid-storm"
    assert set(writes.values()) == {1}, "every binding is written exactly once"
    assert len(writes) == expected
    for b in (await store.list(registry.RESOURCE_BINDING, "default")).items:
        if b.metadata.name == SENTINEL:
            continue
        if int(b.metadata.name[3:6]) % 10 == 0:
            assert [t.name for t in b.spec.clusters] == ["member1", "member2"]
            continue
        assert [(t.name, t.replicas) for t in b.spec.clusters] == [("member2", 2)]
        (task,) = b.spec.graceful_eviction_tasks
        assert (task.from_cluster, task.replicas, task.producer, task.reason) == (
            "member1", 1, "TaintManager", "TaintUntolerated")
