"""MemoryStore's own knobs: lease expiry by its clock, compaction and broken watches seen raw."""

from __future__ import annotations

import contextlib

import pytest

from flotilla.aio.clock import FakeClock
from flotilla.api import registry
from flotilla.store import Compacted, MemoryStore, Unavailable, WatchKind
from tests.factories import make_cluster

PREFIX = "/flotilla/clusters/"


async def test_leases_expire_by_the_store_clock_and_a_plain_put_detaches() -> None:
    clock = FakeClock()
    store = MemoryStore(clock)
    lease = await store.grant_lease(10)
    await store.create(make_cluster("a"), lease=lease)
    detached = await store.create(make_cluster("b"), lease=lease)
    detached.spec.region = "eu"
    await store.update(detached)  # no lease: the key leaves the lease, as in etcd
    await clock.advance(9)
    assert store.expire_leases() == []
    await clock.advance(1)
    assert [o.metadata.name for o in (await store.list(registry.CLUSTER)).items] == ["b"]
    with pytest.raises(Exception, match="not found"):
        await store.create(make_cluster("c"), lease=lease)


async def test_refresh_keeps_a_lease() -> None:
    clock = FakeClock()
    store = MemoryStore(clock)
    lease = await store.grant_lease(10)
    await store.create(make_cluster("a"), lease=lease)
    await clock.advance(8)
    await store.refresh_lease(lease)
    await clock.advance(8)
    assert await store.try_get(registry.CLUSTER, "", "a") is not None


async def test_watch_from_a_revision_then_compacted_then_broken() -> None:
    store = MemoryStore()
    a = await store.create(make_cluster("a"))
    await store.delete(registry.CLUSTER, "", "a")
    start = int(a.metadata.resource_version)
    events = store.watch(PREFIX, start)
    first = await anext(events)
    second = await anext(events)
    assert (first.kind, first.revision) == (WatchKind.PUT, start)
    assert (second.kind, second.revision) == (WatchKind.DELETE, start + 1)
    await events.aclose()

    store.compact(store.revision)
    with pytest.raises(Compacted):
        await anext(store.watch(PREFIX, start))

    live = store.watch(PREFIX, store.revision + 1)
    created = await store.create(make_cluster("b"))
    assert (await anext(live)).revision == int(created.metadata.resource_version)
    store.break_watches()
    with pytest.raises(Unavailable):
        await anext(live)
    with contextlib.suppress(StopAsyncIteration):
        await live.aclose()
