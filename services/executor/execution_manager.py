"""Wiring of the execution side: Works -> member objects, member status -> Works.

A plain class used by the executor service for Push clusters and by the
Pull-mode agent for its own cluster, and run in-process by tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from flotilla.aio.clock import Clock
from flotilla.api import registry
from flotilla.api.events import WatchEvent
from flotilla.api.keys import execution_namespace
from flotilla.api.v1 import cluster_pb2, config_pb2
from flotilla.interpreter.health import HealthInterpreter
from flotilla.member.watches import Connect, Kind, MemberWatches
from flotilla.runtime.concurrency import WORK_SYNCS
from flotilla.runtime.manager import Manager
from flotilla.store import ObjectStore
from flotilla.store.events import EventRecorder
from services.executor import routing
from services.executor.applied import AppliedGenerations
from services.executor.execution import ExecutionReconciler
from services.executor.work_status import MEMBER_OBJECT_INDEX, WorkStatusReconciler, member_objects_of


class ExecutionManager:
    def __init__(self, store: ObjectStore, clock: Clock, connect: Connect,
                 serves: Callable[[cluster_pb2.Cluster], bool], *, only_cluster: str | None = None,
                 status_resync: float = 300.0, workers: int = WORK_SYNCS, interpreter_timeout: float = 1.0,
                 events: EventRecorder | None = None, manager: Manager | None = None) -> None:
        self.manager = manager = manager or Manager(store, clock, compact_informers=True)
        namespace = execution_namespace(only_cluster) if only_cluster else None
        self.works = manager.informer(registry.WORK, namespace=namespace)
        self.works.add_indexer(routing.WORK_NAMESPACE_INDEX, lambda w: [w.metadata.namespace])
        self.works.add_indexer(MEMBER_OBJECT_INDEX, member_objects_of)
        self.clusters = manager.informer(registry.CLUSTER)
        self.customizations = manager.informer(registry.RESOURCE_INTERPRETER_CUSTOMIZATION)
        # A customization that does not decode leaves every health Unknown, not interpreted without it.
        self.interpreter = HealthInterpreter(timeout=interpreter_timeout, unreadable=self.customizations.unknown)
        # Shared: status is read from a member's cache only once it has seen the last apply.
        self.applied = applied = AppliedGenerations()
        self.execution = manager.controller("execution", ExecutionReconciler(
            store, clock, self.works, self.clusters, connect, serves, applied, events,
        ), workers=workers)
        # Member status by watch: member events feed per-cluster caches and enqueue the Works
        # that carry the changed objects; the reconcile reads cache and Work, and writes status.
        self.watches = MemberWatches(clock, connect, serves, self._member_changed, self._member_synced,
                                     resync=status_resync)
        self.work_status = WorkStatusReconciler(store, clock, self.works, self.clusters, self.watches,
                                                self.interpreter, events, applied)
        self.status = manager.controller("work-status", self.work_status, workers=workers)
        manager.watch(self.works, routing.work, self.execution, predicate=routing.work_apply_state_changed)
        manager.watch(self.clusters, routing.works_of_cluster(self.works), self.execution,
                      predicate=routing.readiness_changed)
        manager.watch(self.works, routing.work, self.status, predicate=routing.work_apply_state_changed)
        manager.watch(self.clusters, routing.works_of_cluster(self.works), self.status,
                      predicate=routing.readiness_changed)
        manager.on_event(self.clusters, self.watches.on_cluster)
        manager.on_event(self.customizations, self._on_customization)
        manager.add_runnable("member-watches", self.watches.run)

    def _on_customization(self, _: WatchEvent[config_pb2.ResourceInterpreterCustomization]) -> None:
        self.interpreter.set_customizations(self.customizations.list())
        # Health is interpreted anew under the new rules.
        for key in self.works.keys():
            self.status.enqueue(key)

    def _member_changed(self, cluster: str, api_version: str, kind: str, objects: Iterable[tuple[str, str]]) -> None:
        objects = list(objects)
        for namespace, name in objects:
            self.applied.reported((cluster, api_version, kind, namespace, name))
        for key in self.work_status.works_of(cluster, api_version, kind, objects):
            self.status.enqueue(key)

    def _member_synced(self, cluster: str, _: Kind) -> None:
        # Works skipped while the kind was not yet listed (their objects may not have changed).
        for key in self.work_status.works_of_cluster(cluster):
            self.status.enqueue(key)

    async def run(self) -> None:
        """Until cancelled."""
        await self.manager.run()
