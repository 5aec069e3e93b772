"""The event recorder's round trips: a new event is one create, a repeat it wrote itself one
update, and anything else (another recorder's event, a lease gone) falls back to a read."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

import pytest

from flotilla.aio.clock import FakeClock
from flotilla.api.v1 import cluster_pb2, core_pb2
from flotilla.store.base import KeyValue
from flotilla.store.events import REMEMBERED_EVENTS, EventRecorder, event_name
from flotilla.store.memory import MemoryStore


class CountingStore(MemoryStore):
    """The memory store, counting the key-value round trips a real one would make."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock)
        self.calls: Counter[str] = Counter()

    async def kv_get(self, key: str) -> KeyValue | None:
        self.calls["get"] += 1
        return await super().kv_get(key)

    async def kv_create(self, key: str, value: bytes, lease: int | None) -> int | KeyValue | None:
        self.calls["create"] += 1
        return await super().kv_create(key, value, lease)

    async def kv_put_if(self, key: str, value: bytes, mod_revision: int, lease: int | None) -> int | None:
        self.calls["put"] += 1
        return await super().kv_put_if(key, value, mod_revision, lease)


def cluster(name: str) -> cluster_pb2.Cluster:
    c = cluster_pb2.Cluster(api_version="cluster.karmada.io/v1alpha1", kind="Cluster")
    c.metadata.name, c.metadata.uid = name, f"uid-{name}"
    return c


@pytest.fixture
def store() -> CountingStore:
    return CountingStore(FakeClock(datetime(2026, 1, 1, tzinfo=UTC)))


async def stored(store: CountingStore, obj: cluster_pb2.Cluster, reason: str, message: str) -> core_pb2.Event:
    return await store.get(core_pb2.Event, "default", event_name(obj, reason, message))


async def test_a_new_event_is_one_create_and_no_read(store: CountingStore) -> None:
    recorder = EventRecorder(store, "test")
    await recorder.normal(cluster("a"), "Ready", "cluster is ready")
    assert store.calls == Counter(create=1)
    assert (await stored(store, cluster("a"), "Ready", "cluster is ready")).count == 1


async def test_a_repeat_this_recorder_wrote_is_one_update_and_no_read(store: CountingStore) -> None:
    recorder = EventRecorder(store, "test")
    for _ in range(3):
        await recorder.warning(cluster("a"), "NotReady", "cluster is not ready")
    assert store.calls == Counter(create=1, put=2)
    assert (await stored(store, cluster("a"), "NotReady", "cluster is not ready")).count == 3


async def test_a_repeat_of_another_recorders_event_folds_into_it(store: CountingStore) -> None:
    await EventRecorder(store, "one").warning(cluster("a"), "NotReady", "down")
    await EventRecorder(store, "two").warning(cluster("a"), "NotReady", "down")
    # The second recorder's create is refused with the event in the way, which it counts the
    # repeat on: no read of its own.
    assert store.calls == Counter(create=2, put=1)
    assert (await stored(store, cluster("a"), "NotReady", "down")).count == 2


async def test_a_remembered_event_changed_by_another_writer_is_read_afresh(store: CountingStore) -> None:
    first, second = EventRecorder(store, "one"), EventRecorder(store, "two")
    await first.warning(cluster("a"), "NotReady", "down")
    await second.warning(cluster("a"), "NotReady", "down")
    await first.warning(cluster("a"), "NotReady", "down")  # its copy is stale: a conflict, then a read
    assert (await stored(store, cluster("a"), "NotReady", "down")).count == 3


async def test_a_remembered_event_whose_lease_ended_is_created_again(store: CountingStore) -> None:
    recorder = EventRecorder(store, "test", ttl=60)
    await recorder.normal(cluster("a"), "Ready", "up")
    assert isinstance(store.clock, FakeClock)
    await store.clock.advance(61)
    assert store.expire_leases()
    await recorder.normal(cluster("a"), "Ready", "up")
    assert (await stored(store, cluster("a"), "Ready", "up")).count == 1


async def test_the_recorder_remembers_a_bounded_number_of_events(store: CountingStore) -> None:
    recorder = EventRecorder(store, "test")
    for i in range(REMEMBERED_EVENTS + 5):
        await recorder.normal(cluster(f"c{i}"), "Ready", "up")
    assert len(recorder._written) == REMEMBERED_EVENTS
    # The oldest were forgotten: a repeat of one is a create that finds it, and an update.
    store.calls.clear()
    await recorder.normal(cluster("c0"), "Ready", "up")
    assert store.calls == Counter(create=1, put=1)
    assert (await stored(store, cluster("c0"), "Ready", "up")).count == 2
