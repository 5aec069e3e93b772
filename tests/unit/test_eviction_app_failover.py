"""The application failover controller on a MemoryStore and a fake clock: the unhealthy timer is
persisted on the binding and survives a restart, is paused by Unknown health and by a cluster
that is not Ready, evicts exactly at tolerationSeconds (no polling), records and prunes the
eviction history, and retries when the state to preserve is not yet collected."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from flotilla.aio.clock import FakeClock, RealClock
from flotilla.api import codec, registry
from flotilla.api.bindings import Binding
from flotilla.api.v1 import core_pb2, work_pb2
from flotilla.store import MemoryStore
from flotilla.store.events import EventRecorder
from services.eviction.app_failover import ApplicationFailoverConfig
from services.eviction.application import Gates
from services.eviction.controllers import EvictionControllers
from tests.watching import Watch

NAME = "nginx-deployment"


def deployment() -> Any:
    return codec.from_dict({"apiVersion": "apps/v1", "kind": "Deployment",
                            "metadata": {"name": "nginx", "namespace": "default"}, "spec": {"replicas": 2}})


def binding(application: dict[str, Any], kind: str = "ResourceBinding") -> Binding:
    obj = codec.from_dict({
        "apiVersion": "work.karmada.io/v1alpha2", "kind": kind,
        "metadata": {"name": NAME, **({"namespace": "default"} if kind == "ResourceBinding" else {})},
        "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "nginx"},
                 "replicas": 2, "propagateDeps": True,
                 "clusters": [{"name": "member1", "replicas": 1}, {"name": "member2", "replicas": 1}],
                 "failover": {"application": application}},
    })
    assert isinstance(obj, work_pb2.ResourceBinding | work_pb2.ClusterResourceBinding)
    return obj


def rt_of(kind: str) -> Any:
    return registry.RESOURCE_BINDING if kind == "ResourceBinding" else registry.CLUSTER_RESOURCE_BINDING


async def create_cluster(store: MemoryStore, name: str) -> None:
    await store.create(codec.from_dict({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                                        "metadata": {"name": name}, "spec": {}}))
    await set_ready(store, name, True)


async def set_ready(store: MemoryStore, name: str, ready: bool) -> None:
    def change(obj: Any) -> None:
        del obj.status.conditions[:]
        obj.status.conditions.add(type="Ready", status="True" if ready else "False", reason="Probe")

    await store.mutate(registry.CLUSTER, "", name, change, status=True)


async def set_health(store: MemoryStore, health: dict[str, str], kind: str = "ResourceBinding",
                     status: dict[str, Any] | None = None) -> None:
    """As the executor aggregates it."""
    def change(obj: Binding) -> None:
        del obj.status.aggregated_status[:]
        for cluster, value in health.items():
            item = obj.status.aggregated_status.add(cluster_name=cluster, applied=True, health=value, settled=True)
            if status is not None:
                item.status = json.dumps(status).encode()

    await store.mutate(rt_of(kind), "default" if kind == "ResourceBinding" else "", NAME, change, status=True)


@contextlib.asynccontextmanager
async def running(store: MemoryStore, clock: FakeClock, gates: Gates | None = None
                  ) -> AsyncIterator[EvictionControllers]:
    controllers = EvictionControllers(store, clock, events=EventRecorder(store, "eviction"),
                                      application=ApplicationFailoverConfig(gates=gates or Gates()))
    task = asyncio.create_task(controllers.run())
    try:
        for informer in [*controllers.bindings.values(), controllers.clusters]:
            await informer.wait_synced()
        yield controllers
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def current(controllers: EvictionControllers, kind: str = "ResourceBinding") -> Binding:
    obj = controllers.bindings[kind].get(f"default/{NAME}" if kind == "ResourceBinding" else NAME)
    assert obj is not None
    return obj


def targets(controllers: EvictionControllers, kind: str = "ResourceBinding") -> list[str]:
    return [t.name for t in current(controllers, kind).spec.clusters]


async def requeued_at(clock: FakeClock, monotonic: float) -> None:
    """Until the controller sleeps until exactly `monotonic` (its pass is over)."""
    async with asyncio.timeout(5):
        while clock.next_deadline() != pytest.approx(monotonic, abs=1e-6):
            await asyncio.sleep(0.002)


async def events(store: MemoryStore, reason: str) -> list[core_pb2.Event]:
    return [e for e in (await store.list(core_pb2.Event, "")).items if e.reason == reason]  # every namespace


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=RealClock().now().replace(microsecond=0))


@pytest.fixture
async def fleet(store: MemoryStore) -> MemoryStore:
    for name in ("member1", "member2"):
        await create_cluster(store, name)
    await store.create(deployment())
    return store


async def test_sustained_failure_evicts_at_the_toleration_and_a_restart_keeps_the_timer(
        fleet: MemoryStore, clock: FakeClock) -> None:
    store = fleet
    await store.create(binding({"decisionConditions": {"tolerationSeconds": 300}, "purgeMode": "Gracefully",
                                "gracePeriodSeconds": 120, "blockPredecessorSeconds": 900}))
    await set_health(store, {"member1": "Unhealthy", "member2": "Healthy"})
    start = clock.now()
    async with running(store, clock) as controllers:
        watch = Watch(controllers.bindings["ResourceBinding"])
        await watch.until(lambda: len(current(controllers).status.application_unhealthy_since) == 1)
        (record,) = current(controllers).status.application_unhealthy_since
        assert record.cluster_name == "member1" and record.time.ToDatetime(tzinfo=start.tzinfo) == start
        await requeued_at(clock, 300)
        await clock.advance(100)
    # Down for 100 s: the timer is on the binding, not in the controller.
    await clock.advance(100)
    async with running(store, clock) as controllers:
        watch = Watch(controllers.bindings["ResourceBinding"])
        revision = current(controllers).metadata.resource_version
        await requeued_at(clock, 300)
        await clock.advance(99.999)
        assert targets(controllers) == ["member1", "member2"]
        assert current(controllers).metadata.resource_version == revision  # it slept; it did not poll
        await clock.advance(0.001)
        await watch.until(lambda: targets(controllers) == ["member2"])
        spec = current(controllers).spec
        (task,) = spec.graceful_eviction_tasks
        assert (task.from_cluster, task.producer, task.reason, task.purge_mode, task.grace_period_seconds) == (
            "member1", "ApplicationFailover", "ApplicationFailure", "Gracefully", 120)
        assert [(h.cluster_name, h.creation_timestamp.ToSeconds()) for h in spec.active_eviction_history] == [
            ("member1", int(clock.now().timestamp()))]
        # The next pass forgets the evicted cluster's timer (one write per pass).
        await watch.until(lambda: not current(controllers).status.application_unhealthy_since)
        for involved in ("ResourceBinding", "Deployment"):
            assert [e.involved_object.kind for e in await events(store, "EvictWorkloadFromClusterSucceed")
                    if e.involved_object.kind == involved] == [involved]
        # The history entry goes exactly blockPredecessorSeconds later.
        await clock.advance(899.999)
        assert len(current(controllers).spec.active_eviction_history) == 1
        await clock.advance(0.001)
        await watch.until(lambda: not current(controllers).spec.active_eviction_history)


async def test_unknown_and_a_cluster_not_ready_pause_the_timer(fleet: MemoryStore, clock: FakeClock) -> None:
    """Karmada #7431: health oscillating Unhealthy <-> Unknown must still fail over."""
    store = fleet
    await store.create(binding({"decisionConditions": {"tolerationSeconds": 300}, "purgeMode": "Directly"}))
    await set_health(store, {"member1": "Unhealthy", "member2": "Healthy"})
    async with running(store, clock) as controllers:
        watch = Watch(controllers.bindings["ResourceBinding"])

        def paused() -> bool:
            records = current(controllers).status.application_unhealthy_since
            return len(records) == 1 and records[0].HasField("unknown_since")

        await watch.until(lambda: len(current(controllers).status.application_unhealthy_since) == 1)
        await requeued_at(clock, 300)
        await clock.advance(100)
        await set_health(store, {"member1": "Unknown", "member2": "Healthy"})
        await watch.until(paused)
        await clock.advance(1000)
        await set_health(store, {"member1": "Unhealthy", "member2": "Healthy"})
        await watch.until(lambda: not paused())
        await clock.advance(100)  # 200 s counted
        await set_ready(store, "member1", False)
        await watch.until(paused)
        await clock.advance(5000)
        assert targets(controllers) == ["member1", "member2"]
        await set_ready(store, "member1", True)
        await watch.until(lambda: not paused())
        await clock.advance(99.999)
        assert targets(controllers) == ["member1", "member2"]
        await clock.advance(0.001)
        await watch.until(lambda: targets(controllers) == ["member2"])
        assert current(controllers).spec.graceful_eviction_tasks[0].purge_mode == "Directly"
        assert not current(controllers).spec.active_eviction_history  # no blockPredecessorSeconds


async def test_a_cluster_resource_binding_with_purge_mode_never(fleet: MemoryStore, clock: FakeClock) -> None:
    store = fleet
    await store.create(binding({"decisionConditions": {"tolerationSeconds": 0}, "purgeMode": "Never"},
                               kind="ClusterResourceBinding"))
    await set_health(store, {"member1": "Healthy", "member2": "Unhealthy"}, kind="ClusterResourceBinding")
    async with running(store, clock) as controllers:
        watch = Watch(controllers.bindings["ClusterResourceBinding"])
        await watch.until(lambda: targets(controllers, "ClusterResourceBinding") == ["member1"])
        (task,) = current(controllers, "ClusterResourceBinding").spec.graceful_eviction_tasks
        assert (task.from_cluster, task.purge_mode, task.suppress_deletion) == ("member2", "Never", True)


async def test_state_not_yet_collected_warns_and_retries(fleet: MemoryStore, clock: FakeClock) -> None:
    store = fleet
    label = "application.karmada.io/failover-jobid"
    await store.create(binding({"decisionConditions": {"tolerationSeconds": 0}, "purgeMode": "Directly",
                                "statePreservation": {"rules": [{"aliasLabelName": label,
                                                                 "jsonPath": "{ .jobStatus.jobID }"}]}}))
    await set_health(store, {"member1": "Unhealthy", "member2": "Healthy"})
    async with running(store, clock, Gates(state_preservation=True)) as controllers:
        watch = Watch(controllers.bindings["ResourceBinding"])
        async with asyncio.timeout(5):
            while not await events(store, "EvictWorkloadFromClusterFailed"):
                await asyncio.sleep(0.005)
        (warning,) = await events(store, "EvictWorkloadFromClusterFailed")
        assert warning.type == "Warning" and "member1" in warning.message
        assert targets(controllers) == ["member1", "member2"]
        await set_health(store, {"member1": "Unhealthy", "member2": "Healthy"}, status={"jobStatus": {"jobID": "j-7"}})
        await watch.until(lambda: targets(controllers) == ["member2"])
        (task,) = current(controllers).spec.graceful_eviction_tasks
        assert dict(task.preserved_label_state) == {label: "j-7"}
        assert list(task.clusters_before_failover) == ["member1", "member2"]
