"""Leader election, endpoint registration and events on a real etcd."""

from __future__ import annotations

import asyncio
import time

from flotilla.api.v1 import cluster_pb2, core_pb2
from flotilla.store import Store
from flotilla.store.endpoints import Endpoint, Registration, list_endpoints
from flotilla.store.events import EventRecorder, event_name, events_for
from flotilla.store.leader import LeaderElector, current_leader
from tests.factories import make_cluster


async def test_standby_takes_over_within_lease_ttl(store: Store) -> None:
    ttl = 2
    first = LeaderElector(store, "svc", "first", ttl)
    second = LeaderElector(store, "svc", "second", ttl)
    await first.campaign()
    assert await current_leader(store, "svc") == "first"
    standby = asyncio.create_task(second.campaign())
    await asyncio.sleep(0.3)
    assert not standby.done()
    # The leader's process dies: its keep-alives stop, nothing is revoked.
    assert first._lease is not None and first._lease._task is not None
    first._lease._task.cancel()
    died = time.monotonic()
    await asyncio.wait_for(standby, ttl + 2)
    assert time.monotonic() - died <= ttl + 1
    assert await current_leader(store, "svc") == "second"
    await second.resign()
    assert await current_leader(store, "svc") is None


async def test_resign_hands_over_at_once(store: Store) -> None:
    first = LeaderElector(store, "svc", "first", 30)
    second = LeaderElector(store, "svc", "second", 30)
    await first.campaign()
    standby = asyncio.create_task(second.campaign())
    await first.resign()
    await asyncio.wait_for(standby, 5)
    assert second.is_leader and not first.is_leader
    await second.resign()


async def test_endpoint_registration_lives_with_its_lease(store: Store) -> None:
    reg = Registration(store, Endpoint(service="test-svc", id="w1", address="127.0.0.1:1"), ttl=5)
    await reg.start()
    found = await list_endpoints(store, "test-svc")
    assert [(e.service, e.id, e.address) for e in found] == [("test-svc", "w1", "127.0.0.1:1")]
    await reg.close()
    assert await list_endpoints(store, "test-svc") == []


async def test_events_are_folded_and_expire_with_a_lease(store: Store) -> None:
    cluster = await store.create(make_cluster("member1"))
    recorder = EventRecorder(store, "test", ttl=60)
    await recorder.warning(cluster, "ClusterNotReady", "cluster is not ready")
    await recorder.warning(cluster, "ClusterNotReady", "cluster is not ready")
    await recorder.normal(cluster, "ClusterReady", "cluster is ready")
    events = await events_for(store, cluster)
    by_reason = {e.reason: e for e in events}
    assert by_reason["ClusterNotReady"].count == 2
    assert by_reason["ClusterReady"].count == 1
    assert by_reason["ClusterNotReady"].involved_object.name == "member1"
    name = event_name(cluster, "ClusterNotReady", "cluster is not ready")
    kv = await store.client.get(f"/flotilla/events/default/{name}".encode())
    assert kv is not None and kv.lease != 0
    assert isinstance(events[0], core_pb2.Event)
    assert isinstance(cluster, cluster_pb2.Cluster)
