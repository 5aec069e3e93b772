"""Wiring of the execution side: Works -> member objects, member status -> Works.

A plain class used by the executor service for Push clusters and by the
Pull-mode agent for its own cluster, and run in-process by tests.
"""

from __future__ import annotations

from collections.abc import Callable

from flotilla.api import registry
from flotilla.api.keys import execution_namespace
from flotilla.api.v1 import cluster_pb2, config_pb2
from flotilla.interpreter.health import HealthInterpreter
from flotilla.runtime.clock import Clock
from flotilla.runtime.manager import Manager, WatchEvent
from flotilla.store import ObjectStore
from flotilla.store.events import EventRecorder
from services.executor import routing
from services.executor.execution import Connect, ExecutionReconciler
from services.executor.work_status import WorkStatusCollector


class ExecutionManager:
    def __init__(self, store: ObjectStore, clock: Clock, connect: Connect,
                 serves: Callable[[cluster_pb2.Cluster], bool], *, only_cluster: str | None = None,
                 status_period: float = 2.0, workers: int = 16, interpreter_timeout: float = 1.0,
                 events: EventRecorder | None = None, manager: Manager | None = None) -> None:
        self.manager = manager = manager or Manager(store, clock)
        namespace = execution_namespace(only_cluster) if only_cluster else None
        self.works = manager.informer(registry.WORK, namespace=namespace)
        self.works.add_indexer(routing.WORK_NAMESPACE_INDEX, lambda w: [w.metadata.namespace])
        self.clusters = manager.informer(registry.CLUSTER)
        self.customizations = manager.informer(registry.RESOURCE_INTERPRETER_CUSTOMIZATION)
        self.interpreter = HealthInterpreter(timeout=interpreter_timeout)
        self.execution = manager.controller("execution", ExecutionReconciler(
            store, clock, self.works, self.clusters, connect, serves,
        ), workers=workers)
        self.status = WorkStatusCollector(store, clock, self.works, self.clusters, connect, serves, self.interpreter,
                                          events)
        manager.watch(self.works, routing.work, self.execution, predicate=routing.not_deleted)
        manager.watch(self.clusters, routing.works_of_cluster(self.works), self.execution,
                      predicate=routing.readiness_changed)
        manager.on_event(self.customizations, self._on_customization)
        manager.add_runnable("work-status", lambda: self.status.run(status_period))

    def _on_customization(self, _: WatchEvent[config_pb2.ResourceInterpreterCustomization]) -> None:
        self.interpreter.set_customizations(self.customizations.list())

    async def run(self) -> None:
        """Until cancelled."""
        await self.manager.run()
