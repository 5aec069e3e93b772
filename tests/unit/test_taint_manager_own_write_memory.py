"""The evictor takes its own write into its cache (evictor.py `_evict`): a second pass over the
binding before the watch echoes the eviction (the cluster's next taint, the leader's admission
bring one) finds it gone from the cluster, reads nothing from the store and opens no second
eviction span."""

from __future__ import annotations

import asyncio

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from flotilla.aio.clock import FakeClock
from flotilla.api import registry
from flotilla.store import MemoryStore
from flotilla.store.informer import Informer
from services.taint_manager.evictor import BindingEvictionReconciler, EvictorConfig
from services.taint_manager.protection import EvictionProtection, ProtectionConfig
from tests.factories import make_cluster
from tests.taint_support import admitted, make_binding


class CountingStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.gets = 0

    async def get(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.gets += 1
        return await super().get(*args, **kwargs)


async def test_a_pass_before_the_echo_of_an_eviction_does_not_evict_again() -> None:
    store, clock = CountingStore(), FakeClock()
    for name in ("member1", "member2"):
        cluster = make_cluster(name)
        if name == "member1":
            cluster.spec.taints.add(key="cluster.karmada.io/not-ready", effect="NoExecute")
        await store.create(cluster)
    binding = await store.create(make_binding(1))
    clusters, bindings = Informer(store, registry.CLUSTER), Informer(store, registry.RESOURCE_BINDING)
    tasks = [asyncio.create_task(i.run()) for i in (clusters, bindings)]
    await asyncio.gather(clusters.wait_synced(), bindings.wait_synced())
    # The watches stop here: nothing written from now on comes back through them.
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    reconciler = BindingEvictionReconciler(
        store, clock, clusters, {"ResourceBinding": bindings}, EvictionProtection(clock, ProtectionConfig()),
        await admitted(store, "member1"), EvictorConfig(), tracer=provider.get_tracer("evictor"))
    key = f"ResourceBinding:default/{binding.metadata.name}"

    await reconciler.reconcile(key)
    gets = store.gets
    await reconciler.reconcile(key)

    stored = await store.get(registry.RESOURCE_BINDING, "default", binding.metadata.name)
    assert [t.name for t in stored.spec.clusters] == ["member2"]
    assert [t.from_cluster for t in stored.spec.graceful_eviction_tasks] == ["member1"]
    assert store.gets == gets + 1  # the read just above: the second pass read nothing
    assert [s.name for s in exporter.get_finished_spans()].count("binding.evict") == 1
