"""Events written in the background: a caller never waits for the write, writes keep to the
rate asked for after a burst, and a full queue drops new Events (counted), never blocks."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from prometheus_client import REGISTRY

from flotilla.aio.clock import FakeClock
from flotilla.api.v1 import cluster_pb2, core_pb2
from flotilla.store.events import EventQueue, event_name
from flotilla.store.memory import MemoryStore


def cluster(name: str) -> cluster_pb2.Cluster:
    c = cluster_pb2.Cluster(api_version="cluster.karmada.io/v1alpha1", kind="Cluster")
    c.metadata.name, c.metadata.uid = name, f"uid-{name}"
    c.spec.api_endpoint = "https://" + "x" * 1000  # what the queue need not hold on to
    return c


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime(2026, 1, 1, tzinfo=UTC))


@pytest.fixture
def store(clock: FakeClock) -> MemoryStore:
    return MemoryStore(clock)


async def written(store: MemoryStore) -> list[core_pb2.Event]:
    return list((await store.list(core_pb2.Event, "default")).items)


@pytest.fixture
async def running(store: MemoryStore) -> AsyncIterator[EventQueue]:
    queue = EventQueue(store, "test", qps=2, capacity=100)
    task = asyncio.create_task(queue.run())
    yield queue
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_recording_returns_before_the_write_and_the_write_follows(store: MemoryStore) -> None:
    queue = EventQueue(store, "test")
    await queue.normal(cluster("a"), "Ready", "cluster is ready")
    assert await written(store) == []  # nothing runs the queue yet
    task = asyncio.create_task(queue.run())
    try:
        await asyncio.wait_for(queue.drain(), 10)
    finally:
        task.cancel()
    (event,) = await written(store)
    assert event.metadata.name == event_name(cluster("a"), "Ready", "cluster is ready")
    ref = event.involved_object
    assert (ref.kind, ref.api_version, ref.name, ref.uid) == ("Cluster", "cluster.karmada.io/v1alpha1", "a", "uid-a")
    assert event.reporting_component == "test"


async def test_after_a_burst_writes_keep_to_the_rate(store: MemoryStore, clock: FakeClock,
                                                     running: EventQueue) -> None:
    for i in range(6):
        running.emit(cluster(f"c{i}"), "Normal", "Ready", "cluster is ready")
    await clock.advance(0)
    assert len(await written(store)) == 4  # a burst of twice the rate goes at once
    await clock.advance(0.5)
    assert len(await written(store)) == 5  # then one every 1/qps seconds
    await clock.advance(0.5)
    assert len(await written(store)) == 6


async def test_under_a_storm_events_go_out_a_group_at_a_time(store: MemoryStore, clock: FakeClock) -> None:
    """After the burst, a quarter of a second's worth at a time (written together, they travel to
    etcd as one request), not one every 1/qps seconds: the rate is the same."""
    queue = EventQueue(store, "storm", qps=40, capacity=1000)
    for i in range(200):
        queue.emit(cluster(f"c{i}"), "Normal", "Ready", "cluster is ready")
    task = asyncio.create_task(queue.run())
    try:
        await clock.advance(0)
        assert len(await written(store)) == 80  # the burst: twice the rate
        await clock.advance(0.2)
        assert len(await written(store)) == 80  # one at a time, 8 would be out by now
        await clock.advance(0.05)
        assert len(await written(store)) == 90  # a group of 0.25 s x 40
        await clock.advance(1.0)
        assert len(await written(store)) == 130  # still 40 a second
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_full_queue_drops_new_events_and_counts_them(store: MemoryStore) -> None:
    before = REGISTRY.get_sample_value("flotilla_events_dropped_total", {"component": "full"}) or 0.0
    queue = EventQueue(store, "full", capacity=2)
    for i in range(5):
        await queue.warning(cluster(f"c{i}"), "NotReady", "down")
    assert queue.dropped == 3
    assert REGISTRY.get_sample_value("flotilla_events_dropped_total", {"component": "full"}) == before + 3
    task = asyncio.create_task(queue.run())
    try:
        await asyncio.wait_for(queue.drain(), 10)
    finally:
        task.cancel()
    assert sorted(e.involved_object.name for e in await written(store)) == ["c0", "c1"]


async def test_the_events_waiting_to_be_written_are_a_gauge_that_empties_as_they_are(store: MemoryStore) -> None:
    def queued() -> float | None:
        return REGISTRY.get_sample_value("flotilla_events_queued", {"component": "backlog"})

    queue = EventQueue(store, "backlog", capacity=2)
    for i in range(3):  # the third is dropped, never queued
        await queue.normal(cluster(f"c{i}"), "Ready", "up")
    assert queued() == 2
    task = asyncio.create_task(queue.run())
    try:
        await asyncio.wait_for(queue.drain(), 10)
    finally:
        task.cancel()
    assert queued() == 0
