"""The taint manager's half of state preservation (docs/karmada-rules.md §12.3), through its
reconciler on an in-memory store: with StatefulFailoverInjection on, the eviction task carries
the rules' values read from the failed cluster's collected status, and the clusters the workload
ran on before the failover; with the gate off, neither."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from flotilla.aio.clock import FakeClock
from flotilla.api import registry
from flotilla.api.v1 import work_pb2
from flotilla.rules.eviction_tasks import StateNotCollected
from flotilla.store import MemoryStore
from flotilla.store.informer import Informer
from services.taint_manager.evictor import BindingEvictionReconciler, EvictorConfig
from services.taint_manager.protection import EvictionProtection, ProtectionConfig
from tests.factories import make_cluster
from tests.taint_support import admitted

JOB_LABEL = "application.karmada.io/cluster-failover-jobid"


def flink_binding(*clusters: str, status: bytes | None) -> work_pb2.ResourceBinding:
    b = work_pb2.ResourceBinding(api_version="work.karmada.io/v1alpha2", kind="ResourceBinding")
    b.metadata.name, b.metadata.namespace = "flink-app-flinkdeployment", "default"
    for name in clusters:
        b.spec.clusters.add(name=name)
    b.spec.failover.cluster.purge_mode = "Directly"
    b.spec.failover.cluster.state_preservation.rules.add(alias_label_name=JOB_LABEL, json_path="{ .jobStatus.jobId }")
    if status is not None:
        b.status.aggregated_status.add(cluster_name=clusters[0], status=status)
    return b


@pytest.fixture
async def informers(store: MemoryStore) -> AsyncIterator[tuple[Informer, Informer]]:
    clusters = Informer(store, registry.CLUSTER)
    bindings = Informer(store, registry.RESOURCE_BINDING)
    tasks = [asyncio.create_task(i.run()) for i in (clusters, bindings)]
    await asyncio.gather(clusters.wait_synced(), bindings.wait_synced())
    yield clusters, bindings
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def evict(store: MemoryStore, informers: tuple[Informer, Informer], binding: work_pb2.ResourceBinding,
                gate: bool) -> work_pb2.ResourceBinding:
    clusters, bindings = informers
    clock = FakeClock()
    for name in ("member1", "member2", "member3"):
        cluster = make_cluster(name)
        if name == "member1":
            cluster.spec.taints.add(key="cluster.karmada.io/not-ready", effect="NoExecute")
        await store.create(cluster)
    created = await store.create(binding)
    key = f"{created.metadata.namespace}/{created.metadata.name}"
    async with asyncio.timeout(5):
        while clusters.get("member3") is None or bindings.get(key) is None:
            await asyncio.sleep(0.01)
    reconciler = BindingEvictionReconciler(
        store, clock, clusters, {"ResourceBinding": bindings}, EvictionProtection(clock, ProtectionConfig()),
        await admitted(store, "member1"), EvictorConfig(state_preservation=gate))
    await reconciler.reconcile(f"ResourceBinding:{key}")
    return await store.get(registry.RESOURCE_BINDING, created.metadata.namespace, created.metadata.name)


@pytest.mark.parametrize("clusters", [("member1",), ("member1", "member3")])
async def test_the_task_keeps_the_job_id_and_the_clusters_before_failover(
    store: MemoryStore, informers: tuple[Informer, Informer], clusters: tuple[str, ...]
) -> None:
    b = flink_binding(*clusters, status=b'{"jobStatus": {"jobId": "j-42", "state": "RUNNING"}}')
    written = await evict(store, informers, b, gate=True)
    (task,) = written.spec.graceful_eviction_tasks
    assert (task.from_cluster, task.purge_mode) == ("member1", "Directly")
    assert dict(task.preserved_label_state) == {JOB_LABEL: "j-42"}
    assert list(task.clusters_before_failover) == list(clusters)
    assert [t.name for t in written.spec.clusters] == list(clusters[1:])


async def test_without_the_gate_the_task_keeps_no_state(
    store: MemoryStore, informers: tuple[Informer, Informer]
) -> None:
    b = flink_binding("member1", status=b'{"jobStatus": {"jobId": "j-42"}}')
    written = await evict(store, informers, b, gate=False)
    (task,) = written.spec.graceful_eviction_tasks
    assert dict(task.preserved_label_state) == {} and list(task.clusters_before_failover) == []


async def test_eviction_waits_for_the_status_to_be_collected(
    store: MemoryStore, informers: tuple[Informer, Informer]
) -> None:
    b = flink_binding("member1", status=None)
    with pytest.raises(StateNotCollected):
        await evict(store, informers, b, gate=True)
    stored = await store.get(registry.RESOURCE_BINDING, "default", "flink-app-flinkdeployment")
    assert [t.name for t in stored.spec.clusters] == ["member1"] and not stored.spec.graceful_eviction_tasks
