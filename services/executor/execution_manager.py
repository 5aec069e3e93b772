"""Wiring of the execution side: Works -> member objects, member status -> Works.

A plain class used by the executor service for Push clusters and by the
Pull-mode agent for its own cluster, and run in-process by tests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from flotilla.api import registry
from flotilla.api.conditions import is_true
from flotilla.api.keys import execution_namespace
from flotilla.api.v1 import cluster_pb2
from flotilla.interpreter.health import HealthInterpreter
from flotilla.runtime.clock import Clock
from flotilla.runtime.controller import Controller
from flotilla.runtime.workqueue import WorkQueue
from flotilla.store import Store
from flotilla.store.events import EventRecorder
from flotilla.store.informer import EventType, Informer
from services.executor.execution import Connect, ExecutionReconciler
from services.executor.work_status import WorkStatusCollector


def _key(obj: object) -> str:
    meta = obj.metadata  # type: ignore[attr-defined]
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


def _readiness(cluster: object) -> tuple[bool, bool]:
    return (is_true(cluster.status.conditions, "Ready"),  # type: ignore[attr-defined]
            cluster.metadata.HasField("deletion_timestamp"))  # type: ignore[attr-defined]


class ExecutionManager:
    def __init__(self, store: Store, clock: Clock, connect: Connect, serves: Callable[[cluster_pb2.Cluster], bool],
                 *, only_cluster: str | None = None, status_period: float = 2.0, workers: int = 16,
                 interpreter_timeout: float = 1.0, events: EventRecorder | None = None) -> None:
        self.status_period = status_period
        namespace = execution_namespace(only_cluster) if only_cluster else None
        self.works = Informer(store, registry.WORK, namespace=namespace)
        self.works.add_indexer("namespace", lambda w: [w.metadata.namespace])
        self.clusters = Informer(store, registry.CLUSTER)
        self.customizations = Informer(store, registry.RESOURCE_INTERPRETER_CUSTOMIZATION)
        self.interpreter = HealthInterpreter(timeout=interpreter_timeout)
        self.execution = Controller("execution", ExecutionReconciler(
            store, clock, self.works, self.clusters, connect, serves,
        ), WorkQueue(clock, "execution"), workers=workers)
        self.status = WorkStatusCollector(store, clock, self.works, self.clusters, connect, serves, self.interpreter,
                                          events)
        self.works.add_handler(self._on_work)
        self.clusters.add_handler(self._on_cluster)
        self.customizations.add_handler(self._on_customization)

    def _on_work(self, kind: EventType, obj: object, old: object) -> None:
        if kind != EventType.DELETED:
            self.execution.enqueue(_key(obj))

    def _on_cluster(self, kind: EventType, obj: object, old: object) -> None:
        # Works wait (with backoff) while their cluster is not Ready; becoming Ready,
        # or starting to terminate, lets them through at once.
        if kind == EventType.DELETED or old is None or _readiness(obj) != _readiness(old):
            for work in self.works.by_index("namespace", execution_namespace(obj.metadata.name)):  # type: ignore[attr-defined]
                self.execution.enqueue(_key(work))

    def _on_customization(self, *_: object) -> None:
        self.interpreter.set_customizations(self.customizations.list())

    async def run(self) -> None:
        informers = [self.customizations, self.clusters, self.works]
        tasks = [asyncio.create_task(i.run()) for i in informers]
        try:
            for informer in informers:
                await informer.wait_synced()
            await asyncio.gather(self.execution.run(), self.status.run(self.status_period))
        finally:
            await self.execution.stop()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
