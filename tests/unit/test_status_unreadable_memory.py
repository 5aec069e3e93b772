"""The status service and an object it cannot read: a Pull member whose Lease does not decode is
not called silent, and a Push member whose Secret does not decode is not probed (so not
counted as failing); either way its Ready stays as it is."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from flotilla.aio.clock import FakeClock
from flotilla.api import keys, registry
from flotilla.api.conditions import get_condition, set_condition
from flotilla.api.v1 import cluster_pb2
from flotilla.clusterstatus.prober import ClusterProber
from flotilla.clusterstatus.thresholds import Thresholds
from flotilla.rules.cluster_secrets import SECRET_TYPE
from flotilla.store import MemoryStore, StoreError
from flotilla.store.informer import Informer
from services.status.health_monitor import LEASE_NAMESPACE, HealthMonitor
from services.status.monitor import Grace
from tests.factories import make_cluster

GARBAGE = b"\xff\xfe not a protobuf"


class Healthy:
    async def health(self) -> Any:
        return SimpleNamespace(online=True, healthy=True)


async def ready_cluster(store: MemoryStore, clock: FakeClock, name: str, mode: str) -> None:
    cluster = make_cluster(name)
    cluster.spec.sync_mode = mode
    await store.create(cluster)

    def ready(obj: cluster_pb2.Cluster) -> None:
        set_condition(obj.status.conditions, "Ready", "True", "ClusterReady", "ok", clock.now())

    await store.mutate(registry.CLUSTER, "", name, ready, status=True)


async def ready_of(store: MemoryStore, name: str) -> str:
    cluster = await store.get(registry.CLUSTER, "", name)
    condition = get_condition(cluster.status.conditions, "Ready")
    assert condition is not None
    return condition.status


@pytest.fixture
async def running() -> AsyncIterator[list[asyncio.Task[None]]]:
    tasks: list[asyncio.Task[None]] = []
    yield tasks
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def synced(tasks: list[asyncio.Task[None]], *informers: Informer[Any]) -> None:
    for informer in informers:
        tasks.append(asyncio.create_task(informer.run()))
        await asyncio.wait_for(informer.wait_synced(), 10)


async def test_a_pull_member_whose_lease_does_not_decode_is_not_called_silent(
    running: list[asyncio.Task[None]],
) -> None:
    clock = FakeClock()
    store = MemoryStore(clock)
    for name in ("unreadable", "silent"):
        await ready_cluster(store, clock, name, "Pull")
    store.put_raw(keys.etcd_key(registry.LEASE.resource, LEASE_NAMESPACE, "unreadable"), GARBAGE)
    clusters, leases = Informer(store, registry.CLUSTER), Informer(store, registry.LEASE)
    await synced(running, clusters, leases)
    monitor = HealthMonitor(store, clock, clusters, leases, Grace(timedelta(seconds=40), timedelta(seconds=60)))
    for _ in range(4):
        await monitor.tick()
        await clock.advance(30)
    await monitor.tick()
    # The member without any Lease went Unknown in the same ticks: the monitor did look.
    assert await ready_of(store, "silent") == "Unknown"
    assert await ready_of(store, "unreadable") == "True"


async def test_a_push_member_whose_secret_does_not_decode_is_not_probed() -> None:
    clock = FakeClock()
    prober = ClusterProber(clock, Thresholds(success=timedelta(seconds=30), failure=timedelta(seconds=30)))
    status = cluster_pb2.ClusterStatus()
    set_condition(status.conditions, "Ready", "True", "ClusterReady", "ok", clock.now())
    store = MemoryStore(clock)
    store.put_raw(keys.etcd_key(SECRET_TYPE.resource, "karmada-cluster", "member1"), GARBAGE)

    async def unreadable() -> Any:
        await store.get(SECRET_TYPE, "karmada-cluster", "member1")  # what loading the credentials reads

    async def healthy() -> Any:
        return Healthy()

    await prober.probe("member1", status, healthy, collect=False)
    for _ in range(5):
        await clock.advance(20)
        with pytest.raises(StoreError):
            await prober.probe("member1", status, unreadable, collect=False)

    async def missing() -> Any:
        raise ValueError("secret karmada-cluster/member1 of cluster member1 not found")

    # Failures count from the first real one: the unreadable Secret's 100 s were none.
    update = await prober.probe("member1", status, missing, collect=False)
    assert update.ready.status == "True"
    await clock.advance(31)
    update = await prober.probe("member1", status, missing, collect=False)
    assert update.ready.status == "False"
