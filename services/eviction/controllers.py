"""The eviction service's wiring: binding informers to its controllers, on a Manager.

A plain class, so tests run it in-process with a store and a clock, stop it at any moment,
and start a fresh one as a restarted service would.
"""

from __future__ import annotations

from opentelemetry import trace

from flotilla.api import bindings
from flotilla.api.bindings import Binding
from flotilla.runtime.clock import Clock
from flotilla.runtime.manager import Manager
from flotilla.store import ObjectStore
from flotilla.store.events import EventRecorder
from flotilla.store.informer import Informer
from services.eviction import routing
from services.eviction.graceful import GracefulEvictionConfig, GracefulEvictionReconciler


class EvictionControllers:
    def __init__(self, store: ObjectStore, clock: Clock, graceful: GracefulEvictionConfig | None = None,
                 workers: int = 5, events: EventRecorder | None = None, tracer: trace.Tracer | None = None,
                 manager: Manager | None = None) -> None:
        self.manager = manager = manager or Manager(store, clock)
        self.bindings: dict[str, Informer[Binding]] = {
            kind.kind: manager.informer(kind.resource_type) for kind in bindings.BINDING_KINDS}
        self.graceful = manager.controller("graceful-eviction", GracefulEvictionReconciler(
            store, clock, self.bindings, graceful, events, tracer), workers=workers)
        for kind, informer in self.bindings.items():
            manager.watch(informer, routing.binding(kind), self.graceful, predicate=routing.has_eviction_work)

    async def run(self) -> None:
        """Until cancelled."""
        await self.manager.run()
