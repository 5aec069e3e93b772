"""What the scheduler's tests (on etcd and in memory) share: clusters to schedule onto, and a live view of
bindings to await a state in instead of sleeping."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from flotilla.api import codec
from flotilla.api.conditions import get_condition
from flotilla.api.registry import ResourceType
from flotilla.store import ObjectStore
from flotilla.store.informer import Informer
from tests.cli_runner import flotillactl as run_flotillactl


def cluster(name: str, cpu: str = "8", **labels: str) -> Any:
    return codec.from_dict({
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": name, "labels": {"env": "prod", **labels}},
        "spec": {"provider": "aws", "region": "us-east-1", "zones": [f"{name}-a"]},
        "status": {
            "conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady"}],
            "apiEnablements": [
                {"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]},
                {"groupVersion": "v1", "resources": [{"name": "namespaces", "kind": "Namespace"}]},
            ],
            "resourceSummary": {"allocatable": {"cpu": cpu, "memory": "32Gi", "pods": "110"},
                                "allocated": {"cpu": "1", "memory": "1Gi", "pods": "5"}},
        },
    })


def duplicated_binding(name: str) -> Any:
    """A claimed ResourceBinding of 2 Duplicated replicas, ready for the scheduler."""
    return codec.from_dict({
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
        "metadata": {"name": name, "namespace": "default",
                     "labels": {"propagationpolicy.karmada.io/permanent-id": "p-1"}},
        "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": name},
                 "replicas": 2, "placement": {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}},
                 "schedulerName": "default-scheduler"},
    })


class Bindings:
    """A live view of one kind of object (bindings, mostly)."""

    def __init__(self, store: ObjectStore, kind: ResourceType) -> None:
        self.informer = Informer(store, kind)
        self.changed = asyncio.Condition()
        self.informer.add_handler(self._notify)

    async def _notify(self, *_: object) -> None:
        async with self.changed:
            self.changed.notify_all()

    async def wait(self, key: str, predicate: Callable[[Any], bool], timeout: float = 20) -> Any:
        def ready() -> bool:
            obj = self.informer.get(key)
            return obj is not None and predicate(obj)

        async with asyncio.timeout(timeout), self.changed:
            await self.changed.wait_for(ready)
        return self.informer.get(key)

    async def wait_any(self, predicate: Callable[[Any], bool], timeout: float = 20) -> Any:
        """The first object for which `predicate` holds, once there is one."""
        async with asyncio.timeout(timeout), self.changed:
            await self.changed.wait_for(lambda: any(predicate(o) for o in self.informer.list()))
        return next(o for o in self.informer.list() if predicate(o))


def targets(binding: Any) -> list[tuple[str, int]]:
    return [(t.name, t.replicas) for t in binding.spec.clusters]


def scheduled(reason: str = "Success") -> Callable[[Any], bool]:
    def check(binding: Any) -> bool:
        condition = get_condition(binding.status.conditions, "Scheduled")
        return condition is not None and condition.reason == reason

    return check


def placed(*expected: tuple[str, int]) -> Callable[[Any], bool]:
    def check(binding: Any) -> bool:
        return (targets(binding) == list(expected) and scheduled()(binding)
                and binding.status.scheduler_observed_generation == binding.metadata.generation)

    return check


async def flotillactl(endpoint: str, *argv: str) -> tuple[int, Any, str]:
    """`flotillactl ARGS…` in-process: (exit code, stdout parsed as JSON when it is, stderr)."""
    # main() runs its own event loop, so it gets a thread of its own.
    code, out, err = await asyncio.to_thread(run_flotillactl, "--etcd-endpoints", endpoint, *argv)
    return code, json.loads(out) if out.startswith("{") else out, err
