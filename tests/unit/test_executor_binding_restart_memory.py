"""200 workloads rolled out while the executor is killed twice — once while it makes bindings,
once while it makes Works — converge to exactly one binding per workload and one Work per
workload and cluster, each created once and none deleted. In memory, on a store whose reads
and writes yield as round trips to etcd do, so that both kills land mid-rollout. (The executor
killed mid-rollout on a real etcd: tests/integration/test_executor_rollout_restart.py.)"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from typing import Any

from flotilla.aio.clock import RealClock
from flotilla.api import codec, keys, registry
from flotilla.api.events import EventType
from flotilla.store import MemoryStore
from services.executor.controllers import ExecutorConfig, ExecutorControllers
from tests.unit.test_executor_binding_flow_memory import schedule, watching
from tests.watching import Watch

WORKLOADS = 200
SENTINEL = "zz-sentinel"


def workload(i: int) -> Any:
    return codec.from_dict({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": f"app{i:03d}", "namespace": "default", "labels": {"app": "storm"}},
        "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
    })


def policy() -> Any:
    return codec.from_dict({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "storm", "namespace": "default",
                     "labels": {"propagationpolicy.karmada.io/permanent-id": "storm-id"}},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                   "labelSelector": {"matchLabels": {"app": "storm"}}}],
            "placement": {"clusterAffinity": {"clusterNames": ["member1", "member2"]},
                          "replicaScheduling": {"replicaSchedulingType": "Divided"}},
        },
    })


async def barrier(store: MemoryStore, watch: Watch, rt: registry.ResourceType) -> None:
    sentinel = rt.message(api_version=rt.api_version, kind=rt.kind)
    sentinel.metadata.name, sentinel.metadata.namespace = SENTINEL, "karmada-es-sentinel"
    await store.create(sentinel)
    await watch.until(lambda: watch.informer.get(f"karmada-es-sentinel/{SENTINEL}") is not None)


async def kill(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def start(store: MemoryStore) -> asyncio.Task[None]:
    # Karmada's five workers: with the default, an in-memory store lets the executor finish all
    # 200 before a kill can land mid-rollout.
    return asyncio.create_task(ExecutorControllers(store, RealClock(), ExecutorConfig(workers=5)).run())


async def test_killed_twice_mid_rollout_converges(store: MemoryStore) -> None:
    await asyncio.gather(*(store.create(workload(i)) for i in range(WORKLOADS)))
    await store.create(policy())
    events: Counter[tuple[str, EventType]] = Counter()

    def count(kind: EventType, obj: Any, old: Any) -> None:
        if obj.metadata.name == SENTINEL:
            return
        events[(f"{obj.kind}:{obj.metadata.namespace}/{obj.metadata.name}", kind)] += 1

    async with watching(store, registry.RESOURCE_BINDING) as bindings, watching(store, registry.WORK) as works_:
        bindings.informer.add_handler(count)
        works_.informer.add_handler(count)
        started = time.monotonic()

        executor = start(store)
        await bindings.until(lambda: len(bindings.informer.keys()) >= WORKLOADS // 4, timeout=30)
        await kill(executor)
        bindings_at_kill = len(bindings.informer.keys())

        executor = start(store)
        await bindings.until(lambda: len(bindings.informer.keys()) == WORKLOADS, timeout=30)
        ids = {b.metadata.name: b.metadata.labels["resourcebinding.karmada.io/permanent-id"]
               for b in bindings.informer.list()}
        # The scheduler places them while the executor turns them into Works.
        scheduler = asyncio.gather(*(schedule(store, "default", f"app{i:03d}-deployment",
                                              [("member1", 1), ("member2", 2)]) for i in range(WORKLOADS)))
        await works_.until(lambda: len(works_.informer.keys()) >= WORKLOADS // 2, timeout=30)
        await kill(executor)
        works_at_kill = len(works_.informer.keys())
        await scheduler

        executor = start(store)

        def converged() -> bool:
            found = works_.informer.list()
            return len(found) == 2 * WORKLOADS and all(
                json.loads(w.spec.workload.manifests[0])["spec"]["replicas"] == (1 if w.metadata.namespace
                                                                                 == "karmada-es-member1" else 2)
                for w in found)

        await works_.until(converged, timeout=60)
        elapsed = time.monotonic() - started
        await kill(executor)
        # Whatever the executor wrote before it stopped has reached the watchers once a write
        # made after it has (a watch delivers in revision order).
        await barrier(store, bindings, registry.RESOURCE_BINDING)
        await barrier(store, works_, registry.WORK)

    print(f"\n{WORKLOADS} workloads -> {2 * WORKLOADS} Works in {elapsed:.2f}s, "
          f"killed at {bindings_at_kill} bindings and at {works_at_kill} Works")
    assert bindings_at_kill < WORKLOADS and works_at_kill < 2 * WORKLOADS, "both kills must land mid-rollout"
    assert not [k for k, kind in events if kind == EventType.DELETED], "nothing is ever deleted"
    added = [k for k, kind in events if kind == EventType.ADDED]
    assert len(added) == WORKLOADS * 3 and all(events[(k, EventType.ADDED)] == 1 for k in added)
    for binding in (await store.list(registry.RESOURCE_BINDING, "default")).items:
        name = binding.metadata.name
        assert binding.metadata.labels["resourcebinding.karmada.io/permanent-id"] == ids[name], "identity is kept"
        template_name = name.removesuffix("-deployment")
        for cluster, replicas in (("member1", 1), ("member2", 2)):
            work = await store.get(registry.WORK, keys.execution_namespace(cluster),
                                   keys.work_name("default", template_name, "Deployment"))
            assert work.metadata.labels["resourcebinding.karmada.io/permanent-id"] == ids[name]
            assert json.loads(work.spec.workload.manifests[0])["spec"]["replicas"] == replicas
