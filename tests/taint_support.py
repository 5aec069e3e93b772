"""What the taint manager's tests (on etcd and in memory) share: Ready clusters, bindings to
evict, a running taint manager, and a cluster's taints as an informer sees them."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from datetime import timedelta

from flotilla.aio.clock import Clock, RealClock
from flotilla.api import registry
from flotilla.api.conditions import set_condition
from flotilla.api.v1 import cluster_pb2, work_pb2
from flotilla.store import ObjectStore
from flotilla.store.base import StoreBase
from flotilla.store.informer import Informer
from services.taint_manager.admissions import AdmissionRecords, admitted_record
from services.taint_manager.cluster_taints import TaintConfig
from services.taint_manager.controllers import TaintManager
from services.taint_manager.evictor import EvictorConfig
from services.taint_manager.protection import EvictionProtection, ProtectionConfig
from tests.background import in_background
from tests.factories import make_cluster

NOT_READY = "cluster.karmada.io/not-ready"


async def ready_cluster(store: ObjectStore, name: str) -> None:
    cluster = make_cluster(name)
    cluster = await store.create(cluster)
    set_condition(cluster.status.conditions, "Ready", "True", "ClusterReady", "ok", RealClock().now())
    await store.update_status(cluster)


async def admitted(store: StoreBase, *clusters: str) -> AdmissionRecords:
    """Records admitting each cluster's current failure, as the leader would write them, read."""
    records = AdmissionRecords(store)
    for name in clusters:
        cluster = await store.get(registry.CLUSTER, "", name)
        await records.write(name, admitted_record(cluster), None)
    await records.relist()
    return records


def make_binding(i: int) -> work_pb2.ResourceBinding:
    b = work_pb2.ResourceBinding(api_version="work.karmada.io/v1alpha2", kind="ResourceBinding")
    b.metadata.name, b.metadata.namespace = f"app{i:03d}-deployment", "default"
    b.spec.replicas = 3
    b.spec.clusters.add(name="member1", replicas=1)
    b.spec.clusters.add(name="member2", replicas=2)
    if i % 10 == 0:
        # A tenth tolerate the taint for an hour: they must stay (and not be written).
        b.spec.placement.cluster_tolerations.add(key="dedicated", operator="Exists", effect="NoExecute",
                                                 toleration_seconds=3600)
    return b


def manager(store: ObjectStore, clock: Clock | None = None, failover_gate: bool = True) -> TaintManager:
    clock = clock or RealClock()
    return TaintManager(store, clock, EvictionProtection(clock, ProtectionConfig()),
                        TaintConfig(failover_gate=failover_gate, eviction_timeout=timedelta(minutes=5)),
                        EvictorConfig())


@contextlib.asynccontextmanager
async def running(store: ObjectStore, clock: Clock, failover_gate: bool = True) -> AsyncIterator[TaintManager]:
    started = manager(store, clock, failover_gate)
    async with in_background(started.run()):
        yield started


def taints_of(informer: Informer[cluster_pb2.Cluster], name: str) -> set[tuple[str, str]]:
    cluster = informer.get(name)
    return {(t.key, t.effect) for t in cluster.spec.taints} if cluster else set()
