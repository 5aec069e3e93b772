"""The taint manager's wiring: informers, the two controllers and the event routing between them.

A plain class, so tests run it in-process with a store and a clock, stop it at
any moment, and start a fresh one as a restarted service would.
"""

from __future__ import annotations

import asyncio

from opentelemetry import trace

from flotilla.api import registry
from flotilla.api.conditions import is_true
from flotilla.api.taints import EFFECT_NO_EXECUTE
from flotilla.runtime.clock import Clock
from flotilla.runtime.controller import Controller
from flotilla.runtime.workqueue import WorkQueue
from flotilla.store import Store
from flotilla.store.events import EventRecorder
from flotilla.store.informer import EventType, Informer
from services.taint_manager.cluster_taints import ClusterTaintReconciler, TaintConfig
from services.taint_manager.evictor import BindingEvictionReconciler, EvictorConfig, EvictorState, binding_key
from services.taint_manager.protection import EvictionProtection


def needs_no_evicting(cluster: object) -> bool:
    return is_true(cluster.status.conditions, "Ready") and not any(  # type: ignore[attr-defined]
        t.effect == EFFECT_NO_EXECUTE for t in cluster.spec.taints)  # type: ignore[attr-defined]


def _key(obj: object) -> str:
    meta = obj.metadata  # type: ignore[attr-defined]
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


class TaintManager:
    def __init__(self, store: Store, clock: Clock, protection: EvictionProtection, taint_config: TaintConfig,
                 evictor_config: EvictorConfig, workers: int = 32, events: EventRecorder | None = None,
                 tracer: trace.Tracer | None = None, state: EvictorState | None = None) -> None:
        self.protection = protection
        self.state = state or EvictorState()
        self.clusters = Informer(store, registry.CLUSTER)
        self.policies = Informer(store, registry.CLUSTER_TAINT_POLICY)
        self.bindings = {rt.kind: Informer(store, rt)
                         for rt in (registry.RESOURCE_BINDING, registry.CLUSTER_RESOURCE_BINDING)}
        for informer in self.bindings.values():
            informer.add_indexer("cluster", lambda b: [t.name for t in b.spec.clusters])
        self.taints = Controller("cluster-taints", ClusterTaintReconciler(
            store, clock, self.clusters, self.policies, taint_config, events,
        ), WorkQueue(clock, "cluster-taints"), workers=4)
        self.evictor = Controller("binding-eviction", BindingEvictionReconciler(
            store, clock, self.clusters, self.bindings, protection, evictor_config, events, tracer, self.state,
        ), WorkQueue(clock, "binding-eviction"), workers=workers)
        self.clusters.add_handler(self._on_cluster)
        self.policies.add_handler(self._on_policy)
        for kind, informer in self.bindings.items():
            informer.add_handler(self._binding_handler(kind))

    def _enqueue_bindings_of(self, cluster: str) -> None:
        for kind, informer in self.bindings.items():
            for b in informer.by_index("cluster", cluster):
                self.evictor.enqueue(binding_key(kind, _key(b)))

    def _on_cluster(self, kind: EventType, obj: object, old: object) -> None:
        name = obj.metadata.name  # type: ignore[attr-defined]
        if kind == EventType.DELETED or needs_no_evicting(obj):
            self.protection.release(name)
        if kind != EventType.DELETED:
            self.taints.enqueue(name)
        changed = self.protection.observe(self.clusters.list())
        self._enqueue_bindings_of(name)
        if changed:
            # Protection lifted or tightened: the evictions it held back get another look.
            for held in list(self.state.held):
                self.evictor.enqueue(held)

    def _on_policy(self, *_: object) -> None:
        for cluster in self.clusters.list():
            self.taints.enqueue(cluster.metadata.name)

    def _binding_handler(self, kind_name: str):
        def handle(kind: EventType, obj: object, old: object) -> None:
            if kind != EventType.DELETED:
                self.evictor.enqueue(binding_key(kind_name, _key(obj)))
        return handle

    async def run(self) -> None:
        informers = [self.policies, *self.bindings.values(), self.clusters]
        tasks = [asyncio.create_task(i.run()) for i in informers]
        try:
            for informer in informers:
                await informer.wait_synced()
            await asyncio.gather(self.taints.run(), self.evictor.run())
        finally:
            await self.taints.stop()
            await self.evictor.stop()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
