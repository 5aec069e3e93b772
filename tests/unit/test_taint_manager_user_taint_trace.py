"""A NoExecute taint a user puts on a healthy cluster opens one failover trace of its own:
every binding it evicts joins it, and the Cluster is stamped with it for the later steps."""

from __future__ import annotations

from datetime import timedelta

from flotilla.aio.clock import RealClock
from flotilla.api import registry
from flotilla.api.v1 import cluster_pb2
from flotilla.api.wellknown import TRACE_OPENED_FOR_ANNOTATION
from flotilla.store import MemoryStore
from services.taint_manager.cluster_taints import TaintConfig
from services.taint_manager.controllers import TaintManager
from services.taint_manager.evictor import EvictorConfig, user_taint_signature
from services.taint_manager.protection import EvictionProtection, ProtectionConfig
from tests.background import in_background
from tests.factories import make_cluster
from tests.taint_support import make_binding, ready_cluster
from tests.tracing_support import recording_tracer
from tests.watching import Watch


def test_only_a_users_no_execute_taint_on_a_ready_cluster_has_a_signature() -> None:
    cluster = make_cluster("member1")
    cluster.status.conditions.add(type="Ready", status="True")
    assert user_taint_signature(cluster) == ""
    cluster.spec.taints.add(key="cluster.karmada.io/not-ready", effect="NoExecute").time_added.FromSeconds(5)
    assert user_taint_signature(cluster) == ""
    cluster.spec.taints.add(key="maintenance", effect="NoSchedule").time_added.FromSeconds(6)
    assert user_taint_signature(cluster) == ""
    cluster.spec.taints.add(key="dedicated", effect="NoExecute").time_added.FromSeconds(7)
    assert user_taint_signature(cluster) == "dedicated:NoExecute@7"
    cluster.status.conditions[0].status = "False"
    assert user_taint_signature(cluster) == ""  # the status service opens that failover


async def test_every_binding_a_user_taint_evicts_is_in_its_one_trace(store: MemoryStore) -> None:
    tracer, exporter = recording_tracer()
    clock = RealClock()
    for name in ("member1", "member2"):
        await ready_cluster(store, name)
    for i in range(1, 6):
        await store.create(make_binding(i))
    manager = TaintManager(store, clock, EvictionProtection(clock, ProtectionConfig()),
                           TaintConfig(failover_gate=True, eviction_timeout=timedelta(minutes=5)),
                           EvictorConfig(), tracer=tracer)
    async with in_background(manager.run()):
        await manager.clusters.wait_synced()
        for informer in manager.bindings.values():
            await informer.wait_synced()

        def taint(obj: cluster_pb2.Cluster) -> None:
            added = obj.spec.taints.add(key="dedicated", value="gpu", effect="NoExecute")
            added.time_added.FromDatetime(clock.now())

        await store.mutate(registry.CLUSTER, "", "member1", taint)
        watch = Watch(manager.clusters)
        await watch.until(lambda: TRACE_OPENED_FOR_ANNOTATION in manager.clusters.get(  # type: ignore[union-attr]
            "member1").metadata.annotations)

        def evicted() -> bool:
            return all(not any(t.name == "member1" for t in b.spec.clusters)
                       for b in manager.bindings["ResourceBinding"].list())

        await Watch(manager.bindings["ResourceBinding"]).until(evicted)
    spans = exporter.get_finished_spans()
    [opened] = [s for s in spans if s.name == "cluster.tainted"]
    evicts = [s for s in spans if s.name == "binding.evict"]
    assert len({dict(s.attributes or {})["flotilla.binding"] for s in evicts}) == 5
    assert {s.context.trace_id for s in evicts} == {opened.context.trace_id}
    assert dict(opened.attributes or {})["flotilla.step"] == "detect"
