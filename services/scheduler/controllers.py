"""The scheduler's wiring: informers over Clusters and both binding kinds, one controller per
kind, and what each controller watches (see routing.py), on a Manager.

A plain class, so tests run it in-process with a store and a clock, stop it at any moment,
and start a fresh one as a restarted service would.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from opentelemetry import trace

from flotilla.aio.clock import Clock
from flotilla.api import registry
from flotilla.api.bindings import BINDING_KINDS, Binding
from flotilla.api.events import EventType, WatchEvent
from flotilla.api.registry import ResourceType
from flotilla.api.v1 import cluster_pb2
from flotilla.runtime.controller import Controller
from flotilla.runtime.manager import Manager, ToKeys
from flotilla.runtime.sharing import Owned, ShardedControllers, cache_keys_in_bucket, index_buckets, key_bucket
from flotilla.scheduler import metrics
from flotilla.scheduler.capacity import CapacityLedger
from flotilla.scheduler.framework import Framework
from flotilla.store import ObjectStore
from flotilla.store.base import object_key_of
from flotilla.store.events import EventQueue
from flotilla.store.informer import Informer
from services.scheduler.cluster_snapshots import ClusterView
from services.scheduler.reconciler import (
    BindingScheduler,
    SchedulerOptions,
    held_request,
    ledger_key,
    placed_before,
)
from services.scheduler.routing import (
    binding_keys,
    bindings_affected_by_cluster,
    bindings_not_scheduled,
    cluster_change_matters,
    cluster_status_matters,
    deleted,
    placement_changed,
)

log = logging.getLogger(__name__)


def schedule_priority(bindings: Informer[Binding]) -> Callable[[str], int]:
    """A binding's `spec.schedulePriority.priority` (0 when unset or gone), the order of the
    scheduler's queue: Karmada's scheduler queue is a priority queue on it, so in a failover
    storm the critical bindings are placed while there is still room for them."""
    def priority(key: str) -> int:
        binding = bindings.get(key)
        return binding.spec.schedule_priority.priority if binding is not None else 0

    return priority


class SchedulerLoop:
    """What every replica runs: informers over Clusters and both binding kinds, one controller per
    kind, and the wiring that turns their changes into work.

    `owns` (a bucket -> whether this replica holds it, flotilla.runtime.sharing): the replicas
    divide the bindings by bucket, and each places only its own; `sharded` takes and gives up a
    bucket's bindings. Every replica's decisions fill the same clusters, so each replica also holds
    the replicas that the others just placed in its ledger, from the bindings' changes it reads
    anyway. None: this loop places every binding."""

    def __init__(self, store: ObjectStore, clock: Clock, framework: Framework, options: SchedulerOptions,
                 events: EventQueue | None = None, tracer: trace.Tracer | None = None,
                 manager: Manager | None = None, owns: Callable[[str], bool] | None = None) -> None:
        self.manager = manager = manager or Manager(store, clock)
        self.ledger = CapacityLedger(clock, options.reservation_ttl)
        self.cluster_informer = clusters = manager.informer(registry.CLUSTER)
        self.view = ClusterView(self.cluster_informer, clock, self.ledger)
        self.informers: dict[str, Informer[Binding]] = {}
        self.controllers: dict[str, Controller] = {}
        self.reconcilers: dict[str, BindingScheduler] = {}
        self.sharded: list[ShardedControllers] = []
        manager.on_event(clusters, lambda _: self.view.changed())

        def mine(key: str) -> bool:
            return owns is None or owns(key_bucket(key))

        def cluster_matters(event: WatchEvent[cluster_pb2.Cluster]) -> bool:
            # The initial list finds every binding unscheduled or settled anyway.
            return clusters.synced and cluster_change_matters(event)

        for binding_kind in BINDING_KINDS:
            kind: ResourceType[Binding] = binding_kind.resource_type
            informer = manager.informer(kind)
            reconciler = BindingScheduler(store, clock, kind, informer, self.view, framework, self.ledger, options,
                                          events, tracer)
            controller = manager.controller(
                f"scheduler-{kind.plural}", reconciler if owns is None else Owned(reconciler, owns),
                workers=options.workers, logger=log, priority=schedule_priority(informer))
            manager.on_event(informer, self._forget_reservations(kind), predicate=deleted)
            manager.watch(informer, binding_keys, controller, predicate=self._needs_look(reconciler))
            if owns is not None:
                manager.on_event(informer, self._hold_others_decisions(kind, mine),
                                 predicate=placement_changed)
                index_buckets(informer, object_key_of)
                self.sharded.append(ShardedControllers([controller], cache_keys_in_bucket(informer)))
            affected = bindings_affected_by_cluster(informer)

            def force(event: WatchEvent[cluster_pb2.Cluster], affected: ToKeys[cluster_pb2.Cluster] = affected,
                      reconciler: BindingScheduler = reconciler) -> None:
                for key in affected(event):
                    if mine(key):
                        reconciler.force(key)
                        metrics.incoming(metrics.CLUSTER_CHANGED)

            manager.on_event(clusters, force, predicate=cluster_matters)
            manager.watch(clusters, affected, controller, predicate=cluster_matters)
            manager.watch(clusters, bindings_not_scheduled(informer), controller,
                          predicate=lambda event: clusters.synced and cluster_status_matters(event))
            self.reconcilers[kind.kind] = reconciler
            self.informers[kind.kind] = informer
            self.controllers[kind.kind] = controller

    def _forget_reservations(self, kind: ResourceType[Binding]) -> Callable[[WatchEvent[Binding]], None]:
        return lambda event: self.ledger.forget(ledger_key(kind.kind, object_key_of(event.obj)))

    def _hold_others_decisions(self, kind: ResourceType[Binding],
                               mine: Callable[[str], bool]) -> Callable[[WatchEvent[Binding]], None]:
        """Hold the replicas another replica's decision placed, as its own ledger does, once the
        decision is read: until then (a watch's delivery) two replicas may count the same free
        room. This replica's own decisions were held when made."""
        def hold(event: WatchEvent[Binding]) -> None:
            key = object_key_of(event.obj)
            if event.old is None or mine(key):
                return
            self.ledger.record(ledger_key(kind.kind, key), placed_before(event.old),
                               {t.name: t.replicas for t in event.obj.spec.clusters}, held_request(event.obj))

        return hold

    @staticmethod
    def _needs_look(reconciler: BindingScheduler) -> Callable[[WatchEvent[Binding]], bool]:
        def predicate(event: WatchEvent[Binding]) -> bool:
            if event.type is EventType.DELETED:
                metrics.incoming(metrics.BINDING_DELETE)
                return True
            binding, old = event.obj, event.old
            if old is not None and old.metadata.generation == binding.metadata.generation:
                return False
            # Its own spec write needs no new decision.
            needed = not reconciler.own_change(object_key_of(binding), binding.metadata.generation)
            if needed:
                metrics.incoming(metrics.BINDING_ADD if old is None else metrics.BINDING_UPDATE)
            return needed

        return predicate

    async def run(self) -> None:
        """Until cancelled."""
        await self.manager.run()
