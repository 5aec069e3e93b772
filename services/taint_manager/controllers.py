"""The taint manager's wiring: informers, the two controllers and the event routing between
them (see routing.py), on a Manager.

A plain class, so tests run it in-process with a store and a clock, stop it at
any moment, and start a fresh one as a restarted service would.
"""

from __future__ import annotations

from opentelemetry import trace

from flotilla.aio.clock import Clock
from flotilla.api import bindings, registry
from flotilla.api.bindings import Binding
from flotilla.api.events import EventType, WatchEvent
from flotilla.api.v1 import cluster_pb2
from flotilla.runtime.manager import Manager
from flotilla.store import ObjectStore
from flotilla.store.events import EventRecorder
from flotilla.store.informer import Informer
from services.taint_manager import routing
from services.taint_manager.cluster_taints import ClusterTaintReconciler, TaintConfig
from services.taint_manager.evictor import BindingEvictionReconciler, EvictorConfig, EvictorState
from services.taint_manager.protection import EvictionProtection
from services.taint_manager.taint_times import TaintTimes


class TaintManager:
    def __init__(self, store: ObjectStore, clock: Clock, protection: EvictionProtection, taint_config: TaintConfig,
                 evictor_config: EvictorConfig, workers: int = 32, events: EventRecorder | None = None,
                 tracer: trace.Tracer | None = None, state: EvictorState | None = None,
                 manager: Manager | None = None) -> None:
        self.protection = protection
        self.state = state or EvictorState()
        self.manager = manager = manager or Manager(store, clock)
        self.clusters = manager.informer(registry.CLUSTER)
        self.policies = manager.informer(registry.CLUSTER_TAINT_POLICY)
        self.bindings: dict[str, Informer[Binding]] = {
            kind.kind: manager.informer(kind.resource_type) for kind in bindings.BINDING_KINDS}
        for informer in self.bindings.values():
            informer.add_indexer(routing.CLUSTER_INDEX, routing.index_by_cluster)
        times = TaintTimes()
        self.taints = manager.controller("cluster-taints", ClusterTaintReconciler(
            store, clock, self.clusters, self.policies, taint_config, events, times,
        ), workers=4)
        self.evictor = manager.controller("binding-eviction", BindingEvictionReconciler(
            store, clock, self.clusters, self.bindings, protection, evictor_config, events, tracer, self.state,
            times,
        ), workers=workers, eviction=True)
        self._protection_changed = False
        # Before the watches below: they read what it decided.
        manager.on_event(self.clusters, self._observe_protection)
        manager.watch(self.clusters, routing.cluster_name, self.taints, predicate=routing.not_deleted)
        manager.watch(self.clusters, routing.bindings_on_cluster(self.bindings), self.evictor,
                      predicate=routing.eviction_inputs_changed)
        # Protection lifted or tightened: the evictions it held back get another look.
        manager.watch(self.clusters, routing.held_evictions(self.state), self.evictor,
                      predicate=lambda _: self._protection_changed)
        manager.watch(self.policies, routing.every_cluster(self.clusters), self.taints)
        for kind, informer in self.bindings.items():
            manager.watch(informer, routing.binding(kind), self.evictor, predicate=routing.binding_spec_changed)

    def _observe_protection(self, event: WatchEvent[cluster_pb2.Cluster]) -> None:
        if not routing.protection_inputs_changed(event):
            # Most Cluster events are status collections: a look at every cluster for each of
            # them would be a large share of this service's work at a hundred members.
            self._protection_changed = False
            return
        if event.type is EventType.DELETED or routing.needs_no_evicting(event.obj):
            self.protection.release(event.obj.metadata.name)
        # A cluster stored but never readable is missing from the list: not all there are.
        self._protection_changed = self.protection.observe(
            self.clusters.list(), complete=self.clusters.synced and not self.clusters.unknown())

    async def run(self) -> None:
        """Until cancelled."""
        try:
            await self.manager.run()
        finally:
            self.state.release_all()
