"""The taint timeline of a failing cluster through the running taint manager, on a fake clock,
and `flotillactl taint` driving evictions."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from datetime import timedelta

import pytest

from flotilla.api import registry
from flotilla.api.conditions import set_condition
from flotilla.api.v1 import cluster_pb2
from flotilla.runtime.clock import Clock, FakeClock, RealClock
from flotilla.store import Store
from flotilla.store.embedded import EmbeddedEtcd
from flotilla.store.informer import Informer
from services.taint_manager.cluster_taints import TaintConfig
from services.taint_manager.evictor import EvictorConfig
from services.taint_manager.manager import TaintManager
from services.taint_manager.protection import EvictionProtection, ProtectionConfig
from tests.conftest import CtlResult
from tests.factories import make_cluster
from tests.integration.test_taint_manager_eviction import make_binding, ready_cluster
from tests.watching import Watch

NOT_READY = "cluster.karmada.io/not-ready"


@contextlib.asynccontextmanager
async def running(store: Store, clock: Clock, failover_gate: bool = True) -> AsyncIterator[TaintManager]:
    manager = TaintManager(store, clock, EvictionProtection(clock, ProtectionConfig()),
                           TaintConfig(failover_gate=failover_gate, eviction_timeout=timedelta(minutes=5)),
                           EvictorConfig())
    task = asyncio.create_task(manager.run())
    try:
        yield manager
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def taints_of(informer: Informer, name: str) -> set[tuple[str, str]]:
    cluster = informer.get(name)
    return {(t.key, t.effect) for t in cluster.spec.taints} if cluster else set()


@pytest.mark.parametrize("gate", [True, False])
async def test_failing_cluster_gets_no_execute_exactly_at_the_timeout(store: Store, gate: bool) -> None:
    clock = FakeClock(start=RealClock().now().replace(microsecond=0))
    cluster = make_cluster("member1")
    cluster.spec.taints.add(key="maintenance", effect="NoSchedule")
    cluster = await store.create(cluster)
    set_condition(cluster.status.conditions, "Ready", "False", "ClusterNotReachable", "down", clock.now())
    await store.update_status(cluster)
    async with running(store, clock, failover_gate=gate) as manager:
        watch = Watch(manager.clusters)
        await watch.until(lambda: (NOT_READY, "NoSchedule") in taints_of(manager.clusters, "member1"))
        await clock.advance(299)
        assert (NOT_READY, "NoExecute") not in taints_of(manager.clusters, "member1")
        await clock.advance(1)
        if gate:
            await watch.until(lambda: (NOT_READY, "NoExecute") in taints_of(manager.clusters, "member1"))
        else:
            await clock.advance(600)
            assert (NOT_READY, "NoExecute") not in taints_of(manager.clusters, "member1")

        def recover(obj: cluster_pb2.Cluster) -> None:
            set_condition(obj.status.conditions, "Ready", "True", "ClusterReady", "ok", clock.now())

        await store.mutate(registry.CLUSTER, "", "member1", recover, status=True)
        await watch.until(lambda: taints_of(manager.clusters, "member1") == {("maintenance", "NoSchedule")})


def test_manual_taint_evicts_and_its_removal_stops_pending(
    webhook: object, clean_etcd: EmbeddedEtcd, ctl: Callable[..., CtlResult]
) -> None:
    async def scenario() -> None:
        store = await Store.connect(clean_etcd.endpoint)
        try:
            for name in ("member1", "member2"):
                await ready_cluster(store, name)
            untolerating, patient = make_binding(1), make_binding(10)  # make_binding(10) tolerates an hour
            for b in (untolerating, patient):
                await store.create(b)
            async with running(store, RealClock()) as manager:
                bindings = manager.bindings["ResourceBinding"]
                watch = Watch(bindings)
                tainted = await asyncio.to_thread(ctl, "taint", "clusters", "member1", "dedicated=x:NoExecute")
                assert tainted.code == 0, tainted.err
                key = f"default/{untolerating.metadata.name}"
                await watch.until(lambda: [t.name for t in bindings.get(key).spec.clusters] == ["member2"])
                pending_key = f"ResourceBinding:default/{patient.metadata.name}"
                await watch.until(lambda: pending_key in manager.state.pending)
                (pending,) = manager.state.pending[pending_key]
                assert pending.cluster == "member1"

                removed = await asyncio.to_thread(ctl, "taint", "clusters", "member1", "dedicated:NoExecute-")
                assert removed.code == 0, removed.err
                cluster_watch = Watch(manager.clusters)
                await cluster_watch.until(lambda: not taints_of(manager.clusters, "member1"))
                async with asyncio.timeout(10):
                    while pending_key in manager.state.pending:
                        await asyncio.sleep(0.01)
                patient_now = bindings.get(f"default/{patient.metadata.name}")
                assert [t.name for t in patient_now.spec.clusters] == ["member1", "member2"]
        finally:
            await store.close()

    asyncio.run(scenario())
