"""The failover-history and failback controllers on a MemoryStore and a fake clock: a failover
is recorded, given its destinations and its recovery time (and the histogram observes it);
failback happens exactly when the window ends, never without being enabled, and one binding
at a time across the fleet."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import Any

from prometheus_client import REGISTRY

from flotilla.aio.clock import FakeClock, RealClock
from flotilla.api import codec, registry
from flotilla.api.conditions import set_condition
from flotilla.api.v1 import cluster_pb2, work_pb2
from flotilla.rules.failover_history import recovery_seconds
from flotilla.store import MemoryStore
from flotilla.store.events import EventRecorder
from services.eviction.controllers import EvictionControllers
from services.eviction.graceful import GracefulEvictionConfig
from tests.eviction_support import aggregated_for_this_generation, others_catch_up
from tests.watching import Watch


def rb(name: str, clusters: dict[str, int], tasks: dict[str, int] | None = None,
       failback: dict[str, Any] | None = None) -> work_pb2.ResourceBinding:
    spec: dict[str, Any] = {
        "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": name},
        "replicas": 3,
        "placement": {"replicaScheduling": {"replicaSchedulingType": "Divided",
                                            "replicaDivisionPreference": "Weighted"}},
        "clusters": [{"name": c, "replicas": r} for c, r in clusters.items()],
        "gracefulEvictionTasks": [{"fromCluster": c, "purgeMode": "Gracefully", "reason": "TaintUntolerated",
                                   "producer": "TaintManager", "replicas": r} for c, r in (tasks or {}).items()],
    }
    if failback is not None:
        spec["failover"] = {"cluster": {"purgeMode": "Gracefully", "failback": failback}}
    obj = codec.from_dict({"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
                           "metadata": {"name": name, "namespace": "default"}, "spec": spec})
    assert isinstance(obj, work_pb2.ResourceBinding)
    return obj


async def set_status(store: MemoryStore, name: str, health: dict[str, str], observe: bool = True,
                     history: list[work_pb2.FailoverRecord] | None = None) -> None:
    def change(obj: work_pb2.ResourceBinding) -> None:
        if observe:
            obj.status.scheduler_observed_generation = obj.metadata.generation
            aggregated_for_this_generation(obj)
        del obj.status.aggregated_status[:]
        for cluster, value in health.items():
            obj.status.aggregated_status.add(cluster_name=cluster, applied=True, health=value)
        if history is not None:
            del obj.status.failover_history[:]
            obj.status.failover_history.extend(history)

    await store.mutate(registry.RESOURCE_BINDING, "default", name, change, status=True)


async def set_ready(store: MemoryStore, name: str, status: str, now: datetime) -> None:
    def change(obj: cluster_pb2.Cluster) -> None:
        set_condition(obj.status.conditions, "Ready", status, "ClusterReady" if status == "True" else "Down", "", now)

    if await store.try_get(registry.CLUSTER, "", name) is None:
        cluster = codec.from_dict({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                                   "metadata": {"name": name}, "spec": {"syncMode": "Push"}})
        await store.create(cluster)
    await store.mutate(registry.CLUSTER, "", name, change, status=True)


@contextlib.asynccontextmanager
async def running(store: MemoryStore, clock: FakeClock, scheduler: bool = True) -> AsyncIterator[EvictionControllers]:
    controllers = EvictionControllers(store, clock, GracefulEvictionConfig(timedelta(hours=1)),
                                      events=EventRecorder(store, "eviction"))
    pending = others_catch_up(store, controllers, scheduler)
    task = asyncio.create_task(controllers.run())
    try:
        for informer in [*controllers.bindings.values(), controllers.clusters]:
            await informer.wait_synced()
        yield controllers
    finally:
        task.cancel()
        await asyncio.gather(task, *pending, return_exceptions=True)


def get(controllers: EvictionControllers, name: str) -> work_pb2.ResourceBinding:
    obj = controllers.bindings["ResourceBinding"].get(f"default/{name}")
    assert isinstance(obj, work_pb2.ResourceBinding)
    return obj


def placement(controllers: EvictionControllers, name: str) -> dict[str, int]:
    return {t.name: t.replicas for t in get(controllers, name).spec.clusters}


def tasks(controllers: EvictionControllers, name: str) -> list[tuple[str, str]]:
    return [(t.from_cluster, t.producer) for t in get(controllers, name).spec.graceful_eviction_tasks]


def recovery_count() -> float:
    return REGISTRY.get_sample_value("flotilla_failover_recovery_seconds_count") or 0


def start() -> FakeClock:
    return FakeClock(start=RealClock().now().replace(microsecond=0))


async def test_a_failover_is_recorded_then_recovered(store: MemoryStore) -> None:
    clock = start()
    # As the taint manager leaves it: member1 moved into a task, the scheduler not yet there.
    await store.create(rb("web", {"member2": 2}, tasks={"member1": 1}))
    before = recovery_count()
    async with running(store, clock, scheduler=False) as controllers:
        watch = Watch(controllers.bindings["ResourceBinding"])

        def history() -> list[work_pb2.FailoverRecord]:
            return list(get(controllers, "web").status.failover_history)

        await watch.until(lambda: len(history()) == 1 and history()[0].HasField("time"))
        [record] = history()
        assert (record.from_cluster, record.reason, record.producer) == ("member1", "TaintUntolerated", "TaintManager")
        assert record.time == get(controllers, "web").spec.graceful_eviction_tasks[0].creation_timestamp
        assert {t.name: t.replicas for t in record.clusters_before} == {"member1": 1, "member2": 2}
        assert not record.to_clusters
        # The scheduler places the replicas on member2.

        def place(obj: work_pb2.ResourceBinding) -> None:
            del obj.spec.clusters[:]
            obj.spec.clusters.add(name="member2", replicas=3)

        await store.mutate(registry.RESOURCE_BINDING, "default", "web", place)
        await set_status(store, "web", {"member2": "Unknown"})
        await watch.until(lambda: list(history()[0].to_clusters) == ["member2"])
        assert not history()[0].HasField("recovered_time")
        await clock.advance(12.3)
        await set_status(store, "web", {"member2": "Healthy"})
        await watch.until(lambda: history()[0].HasField("recovered_time"))
        assert recovery_seconds(history()[0]) == 12.3
        # The graceful eviction controller drops the task too; the history stays.
        await watch.until(lambda: tasks(controllers, "web") == [])
        assert len(history()) == 1
    assert recovery_count() == before + 1


def away_record(now: datetime, before: dict[str, int]) -> work_pb2.FailoverRecord:
    r = work_pb2.FailoverRecord(from_cluster="member1", to_clusters=["member2"], reason="TaintUntolerated",
                                producer="TaintManager")
    r.time.FromDatetime(now - timedelta(minutes=30))
    r.recovered_time.FromDatetime(now - timedelta(minutes=29))
    for name, replicas in before.items():
        r.clusters_before.add(name=name, replicas=replicas)
    return r


async def away(store: MemoryStore, clock: FakeClock, name: str, failback: dict[str, Any] | None,
               before: dict[str, int] | None = None) -> None:
    """A binding member1's failure moved to member2, recovered there."""
    await store.create(rb(name, {"member2": 3}, failback=failback))
    await set_status(store, name, {"member2": "Healthy"},
                     history=[away_record(clock.now(), before or {"member1": 3})])


ON = {"enabled": True, "stabilizationWindowSeconds": 600, "maxConcurrent": 1}


async def test_failback_exactly_when_the_window_ends_and_the_away_copy_stays_until_home_is_healthy(
        store: MemoryStore) -> None:
    clock = start()
    await set_ready(store, "member2", "True", clock.now() - timedelta(hours=1))
    await set_ready(store, "member1", "False", clock.now() - timedelta(hours=1))
    await away(store, clock, "web", ON)
    async with running(store, clock) as controllers:
        watch = Watch(controllers.bindings["ResourceBinding"])
        await clock.advance(100)
        await set_ready(store, "member1", "True", clock.now())
        await clock.advance(599.999)
        assert placement(controllers, "web") == {"member2": 3}
        await clock.advance(0.001)
        await watch.until(lambda: placement(controllers, "web") == {"member1": 3})
        assert tasks(controllers, "web") == [("member2", "Failback")]
        await watch.until(lambda: get(controllers, "web").status.failover_history[0].HasField("failed_back_time"))
        # The copy on member2 stays while member1's is not Healthy yet.
        await set_status(store, "web", {"member1": "Unknown", "member2": "Healthy"})
        await clock.advance(60)
        assert tasks(controllers, "web") == [("member2", "Failback")]
        await set_status(store, "web", {"member1": "Healthy", "member2": "Healthy"})
        await watch.until(lambda: tasks(controllers, "web") == [])
        # Failed back once: nothing moves again, and the failback is no new failover.
        await clock.advance(3600)
        assert placement(controllers, "web") == {"member1": 3}
        assert len(get(controllers, "web").status.failover_history) == 1


async def test_failback_onto_a_superset_leaves_no_task(store: MemoryStore) -> None:
    clock = start()
    await set_ready(store, "member1", "True", clock.now() - timedelta(hours=1))
    await store.create(rb("web", {"member2": 3}, failback=ON))
    await set_status(store, "web", {"member2": "Healthy"},
                     history=[away_record(clock.now(), {"member1": 1, "member2": 2})])
    async with running(store, clock) as controllers:
        watch = Watch(controllers.bindings["ResourceBinding"])
        await watch.until(lambda: placement(controllers, "web") == {"member1": 1, "member2": 2})
        assert tasks(controllers, "web") == []
        await watch.until(lambda: get(controllers, "web").status.failover_history[0].HasField("failed_back_time"))


async def test_off_by_default_nothing_moves_back(store: MemoryStore) -> None:
    clock = start()
    await set_ready(store, "member1", "True", clock.now() - timedelta(hours=1))
    await away(store, clock, "web", None)
    await away(store, clock, "web2", {"enabled": False})
    async with running(store, clock) as controllers:
        await clock.advance(3600)
        assert placement(controllers, "web") == {"member2": 3}
        assert placement(controllers, "web2") == {"member2": 3}
        assert not get(controllers, "web").status.failover_history[0].HasField("failed_back_time")


async def test_one_binding_fails_back_at_a_time_across_the_fleet(store: MemoryStore) -> None:
    clock = start()
    await set_ready(store, "member1", "True", clock.now() - timedelta(hours=1))
    for name in ("a", "b", "c"):
        await away(store, clock, name, ON)
    async with running(store, clock) as controllers:
        watch = Watch(controllers.bindings["ResourceBinding"])
        names = ("a", "b", "c")

        def home() -> list[str]:
            return [n for n in names if placement(controllers, n) == {"member1": 3}]

        await watch.until(lambda: len(home()) == 1)
        await clock.advance(5)
        assert len(home()) == 1
        done: list[str] = []
        for _ in names:
            [first] = [n for n in home() if n not in done]
            await set_status(store, first, {"member1": "Healthy", "member2": "Healthy"})
            await watch.until(lambda: tasks(controllers, first) == [])  # noqa: B023 - awaited at once
            done.append(first)
            if len(done) < len(names):
                await watch.until(lambda: len(home()) == len(done) + 1)
                assert sum(1 for n in names if tasks(controllers, n)) == 1
        assert sorted(done) == list(names)
