"""The eviction service's wiring: binding informers to its controllers, on a Manager.

A plain class, so tests run it in-process with a store and a clock, stop it at any moment,
and start a fresh one as a restarted service would.

Two parts, which one process runs together or a service divides: SHARED, the per-binding work
every replica does for its buckets of bindings (`owns`, flotilla.runtime.sharing): graceful
eviction and the failover history; LEADER, what must be single: application failover (its
cluster-wide timers), failback (a fleet-wide limit) and the unfinished-work metrics.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection

from opentelemetry import trace

from flotilla.aio.clock import Clock
from flotilla.api import bindings, registry
from flotilla.api.bindings import Binding
from flotilla.runtime.concurrency import BINDING_SYNCS
from flotilla.runtime.controller import Controller, Reconciler
from flotilla.runtime.manager import Manager
from flotilla.runtime.sharing import Owned, binding_keys_in_bucket, index_binding_buckets
from flotilla.store import ObjectStore
from flotilla.store.events import EventRecorder
from flotilla.store.informer import Informer
from services.eviction import routing, unfinished
from services.eviction.app_failover import ApplicationFailoverConfig, ApplicationFailoverReconciler
from services.eviction.failback_controller import FailbackReconciler
from services.eviction.graceful import GracefulEvictionConfig, GracefulEvictionReconciler
from services.eviction.history_controller import FailoverHistoryReconciler

SHARED, LEADER = "shared", "leader"


class EvictionControllers:
    def __init__(self, store: ObjectStore, clock: Clock, graceful: GracefulEvictionConfig | None = None,
                 workers: int = BINDING_SYNCS, events: EventRecorder | None = None, tracer: trace.Tracer | None = None,
                 manager: Manager | None = None, application: ApplicationFailoverConfig | None = None,
                 parts: Collection[str] = (SHARED, LEADER), owns: Callable[[str], bool] | None = None) -> None:
        self.manager = manager = manager or Manager(store, clock)
        self.bindings: dict[str, Informer[Binding]] = {
            kind.kind: manager.informer(kind.resource_type) for kind in bindings.BINDING_KINDS}
        self.clusters = manager.informer(registry.CLUSTER)
        self.unfinished: unfinished.Unfinished | None = None
        self.shared: list[Controller] = []
        if SHARED in parts:
            self._add_shared(store, clock, workers, events, tracer, graceful, owns)
        if LEADER in parts:
            self._add_unfinished(clock, graceful or GracefulEvictionConfig())
            self._add_application_failover(store, clock, workers, events, tracer, application)
            self._add_failback(store, clock, events)

    def _add_shared(self, store: ObjectStore, clock: Clock, workers: int, events: EventRecorder | None,
                    tracer: trace.Tracer | None, graceful: GracefulEvictionConfig | None,
                    owns: Callable[[str], bool] | None) -> None:
        """Graceful eviction and status.failoverHistory: per binding, for the buckets `owns` holds."""
        manager = self.manager

        def own(reconciler: Reconciler) -> Reconciler:
            return reconciler if owns is None else Owned(reconciler, owns)

        self.graceful = manager.controller("graceful-eviction", own(GracefulEvictionReconciler(
            store, clock, self.bindings, graceful, events, tracer, self.clusters)), workers=workers, eviction=True)
        self.history = manager.controller("failover-history", own(FailoverHistoryReconciler(
            store, clock, self.bindings, graceful)), workers=workers)
        for kind, informer in self.bindings.items():
            manager.watch(informer, routing.binding(kind), self.graceful, predicate=routing.has_eviction_work)
            manager.watch(informer, routing.binding(kind), self.history, predicate=routing.has_history_work)
        self.shared = [self.graceful, self.history]
        index_binding_buckets(self.bindings)

    def binding_keys(self, bucket: str) -> list[str]:
        """Every binding key in the bucket the shared controllers may be given."""
        return binding_keys_in_bucket(self.bindings, bucket)

    def _add_unfinished(self, clock: Clock, graceful: GracefulEvictionConfig) -> None:
        """Overdue tasks and blocked bindings, exported while this term runs (unfinished.py)."""
        self.unfinished = unfinished.Unfinished(clock, graceful.timeout)
        for kind, informer in self.bindings.items():
            self.manager.on_event(informer, functools.partial(self.unfinished.observe, kind))

    def _add_failback(self, store: ObjectStore, clock: Clock, events: EventRecorder | None) -> None:
        """Failback (one worker: the fleet-wide limit is counted in it)."""
        manager = self.manager
        self.failback = manager.controller("failback", FailbackReconciler(
            store, clock, self.bindings, self.clusters, events), workers=1)
        for kind, informer in self.bindings.items():
            informer.add_indexer(routing.FAILBACK_INDEX, routing.index_failback)
            manager.watch(informer, routing.binding(kind), self.failback, predicate=routing.failback_enabled)
            manager.watch(informer, routing.failback_waiting(self.bindings), self.failback,
                          predicate=routing.failback_slot_freed)
        manager.watch(self.clusters, routing.failback_homes(self.bindings), self.failback,
                      predicate=routing.ready_changed)

    def _add_application_failover(self, store: ObjectStore, clock: Clock, workers: int,
                                  events: EventRecorder | None, tracer: trace.Tracer | None,
                                  application: ApplicationFailoverConfig | None) -> None:
        manager = self.manager
        # Application failover (docs/karmada-rules.md §12.1): binding health and cluster readiness drive its timers.
        application = application or ApplicationFailoverConfig()
        if application.enabled:
            self.application_failover = manager.controller("application-failover", ApplicationFailoverReconciler(
                store, clock, self.clusters, self.bindings, application, events, tracer), workers=workers,
                eviction=True)
            for kind, informer in self.bindings.items():
                informer.add_indexer(routing.TARGET_CLUSTER_INDEX, routing.application_failover_clusters)
                manager.watch(informer, routing.binding(kind), self.application_failover,
                              predicate=routing.has_application_failover_work)
            manager.watch(self.clusters, routing.application_failover_bindings(self.bindings),
                          self.application_failover, predicate=routing.ready_changed)

    async def run(self) -> None:
        """Until cancelled."""
        if self.unfinished is None:
            await self.manager.run()
            return
        unfinished.start(self.unfinished)
        try:
            await self.manager.run()
        finally:
            unfinished.stop(self.unfinished)
