"""The taint manager shared by bucket, on a real etcd: two replicas' shared work, each holding half
of the buckets, and a leader admitting the tainted cluster. Each binding is evicted once, by the
replica holding its bucket, after the leader's record admitted the cluster."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from datetime import timedelta

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from flotilla.aio.clock import RealClock
from flotilla.api import registry
from flotilla.api.v1 import cluster_pb2
from flotilla.runtime.sharing import buckets, key_bucket
from flotilla.store import Store
from services.taint_manager.admissions import ADMITTED, AdmissionRecords, admits
from services.taint_manager.cluster_taints import TaintConfig
from services.taint_manager.controllers import LEADER, SHARED, TaintManager
from services.taint_manager.evictor import EvictorConfig
from services.taint_manager.protection import EvictionProtection, ProtectionConfig
from tests.background import in_background
from tests.taint_support import make_binding, ready_cluster

BINDINGS = range(1, 41)  # make_binding(i) for i a multiple of 10 tolerates the taint for an hour


def part(store: Store, parts: tuple[str, ...], owns: Callable[[str], bool] | None = None,
         exporter: InMemorySpanExporter | None = None) -> TaintManager:
    """One replica's part, as its own process would build it: its own informers and protection."""
    clock = RealClock()
    tracer = None
    if exporter is not None:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        tracer = provider.get_tracer("taint_manager")
    return TaintManager(store, clock, EvictionProtection(clock, ProtectionConfig()),
                        TaintConfig(eviction_timeout=timedelta(minutes=5)), EvictorConfig(), workers=8,
                        tracer=tracer, parts=parts, owns=owns)


@contextlib.asynccontextmanager
async def running(*managers: TaintManager) -> AsyncIterator[None]:
    async with contextlib.AsyncExitStack() as stack:
        for manager in managers:
            await stack.enter_async_context(in_background(manager.run()))
        yield


def evicted_by(exporter: InMemorySpanExporter) -> list[str]:
    return [str(s.attributes["flotilla.binding"]) for s in exporter.get_finished_spans()
            if s.name == "binding.evict" and s.attributes is not None]


async def test_two_replicas_evict_each_binding_once_from_their_own_buckets(store: Store) -> None:
    for name in ("member1", "member2", "member3"):
        await ready_cluster(store, name)
    for i in BINDINGS:
        await store.create(make_binding(i))
    first = set(buckets()[: len(buckets()) // 2])
    names = {i: make_binding(i).metadata.name for i in BINDINGS}
    mine = {names[i] for i in BINDINGS if key_bucket(f"ResourceBinding:default/{names[i]}") in first}
    assert mine and len(mine) < len(BINDINGS)
    one, other = InMemorySpanExporter(), InMemorySpanExporter()
    replicas = (part(store, (SHARED,), lambda b: b in first, one),
                part(store, (SHARED,), lambda b: b not in first, other))
    async with running(*replicas, part(store, (LEADER,))):

        def taint(cluster: cluster_pb2.Cluster) -> None:
            cluster.spec.taints.add(key="dedicated", value="x", effect="NoExecute").time_added.GetCurrentTime()

        await store.mutate(registry.CLUSTER, "", "member1", taint)
        leaving = {names[i] for i in BINDINGS if i % 10}
        async with asyncio.timeout(30):
            while True:
                found = {b.metadata.name: b for b in (await store.list(registry.RESOURCE_BINDING, "default")).items}
                if all([t.name for t in found[n].spec.clusters] == ["member2"] for n in leaving):
                    break
                await asyncio.sleep(0.05)
        # Those tolerating the taint for an hour stay.
        for i in BINDINGS:
            if not i % 10:
                assert [t.name for t in found[names[i]].spec.clusters] == ["member1", "member2"]
        for name in leaving:
            assert [t.from_cluster for t in found[name].spec.graceful_eviction_tasks] == ["member1"]
        by_one = {b.removeprefix("default/") for b in evicted_by(one)}
        by_other = {b.removeprefix("default/") for b in evicted_by(other)}
        assert len(evicted_by(one)) == len(by_one) and len(evicted_by(other)) == len(by_other)
        assert by_one == leaving & mine and by_other == leaving - mine
        # The replicas evicted on the leader's word, which admits member1's failure as it is.
        records = AdmissionRecords(store)
        await records.relist()
        stored = records.get("member1")
        member1 = await store.get(registry.CLUSTER, "", "member1")
        assert stored is not None and stored.record is not None and stored.record.state == ADMITTED
        assert admits(stored.record, member1)
        assert replicas[0].admitted() == ["member1"]
