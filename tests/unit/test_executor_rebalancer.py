"""Issue 36: the WorkloadRebalancer controller (services/executor/rebalancer.py), constructed with
a store and a clock: it sets rescheduleTriggeredAt on the bindings of the workloads it names (so
the scheduler schedules them afresh), reports each workload's result, finishes, and deletes
itself ttlSecondsAfterFinished later."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from flotilla.aio.clock import FakeClock
from flotilla.api import registry
from flotilla.api.v1 import apps_pb2, work_pb2
from flotilla.runtime.controller import Result
from flotilla.scheduler.placement import reschedule_requested
from flotilla.store import Unavailable
from flotilla.store.memory import MemoryStore
from services.executor.rebalancer import (
    RebalanceRetry,
    RebalancerReconciler,
    spec_changed,
    sync_workloads,
)


class Latest:
    """The informer's cache, refreshed from the store before each pass."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.objects: dict[str, apps_pb2.WorkloadRebalancer] = {}

    async def refresh(self) -> None:
        listed = await self.store.list(registry.WORKLOAD_REBALANCER)
        self.objects = {r.metadata.name: r for r in listed.items}

    def get(self, key: str) -> apps_pb2.WorkloadRebalancer | None:
        return self.objects.get(key)


def workload(kind: str, name: str, namespace: str = "", api_version: str = "apps/v1") -> dict[str, str]:
    return {"api_version": api_version, "kind": kind, "namespace": namespace, "name": name}


def rebalancer(*workloads: dict[str, str], ttl: int | None = None) -> apps_pb2.WorkloadRebalancer:
    r = apps_pb2.WorkloadRebalancer(api_version="apps.karmada.io/v1alpha1", kind="WorkloadRebalancer")
    r.metadata.name = "demo"
    for w in workloads:
        r.spec.workloads.add(**w)
    if ttl is not None:
        r.spec.ttl_seconds_after_finished = ttl
    return r


async def put_binding(store: MemoryStore, kind: str, name: str, namespace: str = "",
                      scheduled_at: int = 1_000) -> Any:
    cls = work_pb2.ResourceBinding if namespace else work_pb2.ClusterResourceBinding
    binding = cls(api_version="work.karmada.io/v1alpha2", kind=cls.DESCRIPTOR.name)
    binding.metadata.name, binding.metadata.namespace = f"{name}-{kind}".lower(), namespace
    binding.spec.resource.kind, binding.spec.resource.name = kind, name
    binding.spec.clusters.add(name="member2", replicas=2)
    created = await store.create(binding)
    created.status.last_scheduled_time.FromSeconds(scheduled_at)
    return await store.update_status(created)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def setup(memory_store: MemoryStore, clock: FakeClock) -> tuple[MemoryStore, Latest, RebalancerReconciler]:
    memory_store.clock = clock
    latest = Latest(memory_store)
    return memory_store, latest, RebalancerReconciler(memory_store, clock, latest)  # type: ignore[arg-type]


async def reconcile(latest: Latest, reconciler: RebalancerReconciler, key: str = "demo") -> Result | None:
    await latest.refresh()
    return await reconciler.reconcile(key)


def results(r: apps_pb2.WorkloadRebalancer) -> list[tuple[str, str, str, str]]:
    return [(o.workload.kind, o.workload.name, o.result, o.reason) for o in r.status.observed_workloads]


async def test_every_named_workload_is_rescheduled_and_reported(
        setup: tuple[MemoryStore, Latest, RebalancerReconciler], clock: FakeClock) -> None:
    store, latest, reconciler = setup
    nginx = await put_binding(store, "Deployment", "nginx", "demo")
    reader = await put_binding(store, "ClusterRole", "reader")
    created = await store.create(rebalancer(
        workload("Deployment", "nginx", "demo"),
        workload("ClusterRole", "reader", api_version="rbac.authorization.k8s.io/v1"),
        workload("Deployment", "gone", "demo")))

    assert await reconcile(latest, reconciler) is None, "no TTL: kept"

    done = await store.get(registry.WORKLOAD_REBALANCER, "", "demo")
    assert results(done) == [
        ("Deployment", "gone", "Failed", "ReferencedBindingNotFound"),
        ("Deployment", "nginx", "Successful", ""),
        ("ClusterRole", "reader", "Successful", ""),
    ]
    assert done.status.observed_generation == 1
    assert done.status.finish_time.ToDatetime().timestamp() == pytest.approx(clock.now().timestamp(), abs=1e-3)
    for before in (nginx, reader):
        after = await store.get(registry.for_object(before), before.metadata.namespace, before.metadata.name)
        assert after.spec.reschedule_triggered_at == created.metadata.creation_timestamp
        assert reschedule_requested(after.spec, after.status), "the scheduler schedules it afresh"

    # A second pass (a restart) writes nothing more.
    versions = [(await store.get(registry.RESOURCE_BINDING, "demo", "nginx-deployment")).metadata.resource_version,
                done.metadata.resource_version]
    await reconcile(latest, reconciler)
    assert [(await store.get(registry.RESOURCE_BINDING, "demo", "nginx-deployment")).metadata.resource_version,
            (await store.get(registry.WORKLOAD_REBALANCER, "", "demo")).metadata.resource_version] == versions


async def test_a_newer_reschedule_on_the_binding_is_left_as_it_is(
        setup: tuple[MemoryStore, Latest, RebalancerReconciler], clock: FakeClock) -> None:
    store, latest, reconciler = setup
    binding = await put_binding(store, "Deployment", "nginx", "demo")
    await store.create(rebalancer(workload("Deployment", "nginx", "demo")))
    binding.spec.reschedule_triggered_at.FromDatetime(clock.now() + timedelta(hours=1))
    binding = await store.update(binding)
    await reconcile(latest, reconciler)
    after = await store.get(registry.RESOURCE_BINDING, "demo", "nginx-deployment")
    assert after.metadata.resource_version == binding.metadata.resource_version
    assert results(await store.get(registry.WORKLOAD_REBALANCER, "", "demo")) == [
        ("Deployment", "nginx", "Successful", "")]


@pytest.mark.parametrize("ttl", [0, 60])
async def test_a_finished_rebalancer_is_deleted_after_its_ttl(
        setup: tuple[MemoryStore, Latest, RebalancerReconciler], clock: FakeClock, ttl: int) -> None:
    store, latest, reconciler = setup
    await put_binding(store, "Deployment", "nginx", "demo")
    await store.create(rebalancer(workload("Deployment", "nginx", "demo"), ttl=ttl))
    result = await reconcile(latest, reconciler)
    if ttl:
        assert result == Result(requeue_after=pytest.approx(60.0, abs=1e-3))  # type: ignore[arg-type]
        assert await store.try_get(registry.WORKLOAD_REBALANCER, "", "demo") is not None
        await clock.advance(ttl)
        assert await reconcile(latest, reconciler) is None
    assert await store.try_get(registry.WORKLOAD_REBALANCER, "", "demo") is None


async def test_a_binding_that_cannot_be_written_is_retried_and_only_then_finished(
        setup: tuple[MemoryStore, Latest, RebalancerReconciler], monkeypatch: pytest.MonkeyPatch) -> None:
    store, latest, reconciler = setup
    await put_binding(store, "Deployment", "nginx", "demo")
    await store.create(rebalancer(workload("Deployment", "nginx", "demo"), ttl=0))
    real_mutate = store.mutate

    async def unavailable(*args: Any, **kwargs: Any) -> Any:
        raise Unavailable("etcd is away")

    monkeypatch.setattr(store, "mutate", unavailable)
    with pytest.raises(RebalanceRetry):
        await reconcile(latest, reconciler)
    pending = await store.get(registry.WORKLOAD_REBALANCER, "", "demo")
    assert results(pending) == [("Deployment", "nginx", "", "")]
    assert not pending.status.HasField("finish_time"), "not finished while a workload is to retry"

    monkeypatch.setattr(store, "mutate", real_mutate)
    await reconcile(latest, reconciler)
    assert await store.try_get(registry.WORKLOAD_REBALANCER, "", "demo") is None, "finished, TTL 0"


def test_spec_changes_keep_successes_and_drop_the_rest() -> None:
    r = rebalancer(workload("Deployment", "b", "x"), workload("Deployment", "c", "x"))
    for name, result in (("a", "Successful"), ("b", "Failed"), ("z", "Failed")):
        r.status.observed_workloads.add(workload=apps_pb2.RebalanceObjectReference(**workload("Deployment", name, "x")),
                                        result=result)
    assert [(o.workload.name, o.result) for o in sync_workloads(r)] == [
        ("a", "Successful"),  # no longer listed, but done: kept
        ("b", "Failed"),  # still listed: keeps its result
        ("c", ""),  # new: to rebalance
    ]  # z: no longer listed and not done: dropped


def test_only_creation_and_spec_changes_start_a_pass() -> None:
    from flotilla.api.events import EventType, WatchEvent

    r = rebalancer(workload("Deployment", "a", "x"))
    r.metadata.generation = 1
    status_only = apps_pb2.WorkloadRebalancer()
    status_only.CopyFrom(r)
    status_only.status.observed_generation = 1
    edited = apps_pb2.WorkloadRebalancer()
    edited.CopyFrom(r)
    edited.metadata.generation = 2
    assert spec_changed(WatchEvent(EventType.ADDED, r, None))
    assert not spec_changed(WatchEvent(EventType.MODIFIED, status_only, r))
    assert spec_changed(WatchEvent(EventType.MODIFIED, edited, r))
    assert not spec_changed(WatchEvent(EventType.DELETED, r, None))


def test_the_executor_runs_the_rebalancer(memory_store: MemoryStore) -> None:
    from services.executor.controllers import ExecutorControllers

    executor = ExecutorControllers(memory_store, FakeClock())
    assert "workload-rebalancer" in [c.name for c in executor.manager.controllers]
