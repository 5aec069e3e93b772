"""The detector decides from its informers once they are synced: a template's change becomes
its binding's without reading either from the store, and a decision made on a stale copy is
made again on what the store holds."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable

from flotilla.aio.clock import RealClock
from flotilla.api import registry
from flotilla.api.v1 import meta_pb2, work_pb2
from flotilla.runtime.controller import Result
from flotilla.store import MemoryStore
from flotilla.store.base import KeyValue, copy_of
from flotilla.store.informer import Informer
from services.executor import policy_match
from services.executor.controllers import ExecutorControllers
from services.executor.detector import SELECTOR_INDEX, TemplateReconciler
from tests.background import in_background
from tests.unit.test_executor_binding_flow_memory import DEPLOYMENT, running, seed, watching


class CountingStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.reads: Counter[str] = Counter()

    async def kv_get(self, key: str) -> KeyValue | None:
        self.reads[key.split("/")[2]] += 1
        return await super().kv_get(key)


def with_replicas(template: meta_pb2.Unstructured, replicas: int) -> meta_pb2.Unstructured:
    content = json.loads(template.content)
    content["spec"]["replicas"] = replicas
    template.content = json.dumps(content).encode()
    return template


async def test_a_template_change_reaches_its_binding_without_a_read() -> None:
    store = CountingStore()
    template, policy = seed()
    await store.create(template)
    await store.create(policy)
    async with running(store), watching(store, registry.RESOURCE_BINDING) as bindings:
        await bindings.until(lambda: bindings.informer.get("default/nginx-deployment") is not None)
        store.reads.clear()
        current = await store.get(DEPLOYMENT, "default", "nginx")
        await store.update(with_replicas(copy_of(current), 5), original=current)
        store.reads.clear()  # the test's own read above

        def updated() -> bool:
            rb = bindings.informer.get("default/nginx-deployment")
            return isinstance(rb, work_pb2.ResourceBinding) and rb.spec.replicas == 5

        await bindings.until(updated)
    assert store.reads["deployments.apps"] == 0 and store.reads["resourcebindings"] == 0, store.reads



async def eventually(condition: Callable[[], object], what: str, within: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, f"not within {within}s: {what}"
        await asyncio.sleep(0.01)


async def test_the_detector_decides_a_new_template_once_not_again_for_the_binding_it_made() -> None:
    store = CountingStore()
    template, policy = seed()
    await store.create(policy)
    controllers = ExecutorControllers(store, RealClock())
    detector = controllers.template_reconciler
    passes: Counter[str] = Counter()
    decide = detector.reconcile

    async def counted(key: str) -> Result | None:
        passes[key] += 1
        return await decide(key)

    detector.reconcile = counted  # type: ignore[method-assign]
    async with in_background(controllers.run()):
        await eventually(lambda: DEPLOYMENT.resource in controllers.templates
                         and controllers.templates[DEPLOYMENT.resource].synced, "the policy's kind watched")
        await store.create(template)
        bindings = controllers.bindings[registry.RESOURCE_BINDING.kind]
        await eventually(lambda: bindings.get("default/nginx-deployment") is not None, "the binding made")
        made = await store.get(registry.RESOURCE_BINDING, "default", "nginx-deployment")
        # The executor's binding watch has handled the creation (and routed it, or not) ...
        await eventually(lambda: bindings.revision >= int(made.metadata.resource_version), "the creation watched")
        # ... and the detector has nothing left to do.
        await eventually(lambda: len(controllers.detector.queue) == 0, "the detector's queue empty")
        await controllers.detector.queue.drained(lambda _: True)
    assert passes == {"apps/v1/Deployment:default/nginx": 1}, passes


async def test_a_template_deleted_before_its_new_binding_is_watched_takes_the_binding_with_it() -> None:
    """The detector takes no pass for the echo of a binding it created, so the binding is in its
    cache from the creation on: a pass for the template's deletion that comes before the watch
    has delivered the binding still finds it, and deletes it."""
    store = MemoryStore()
    template, policy = seed()
    await store.create(policy)
    await store.create(template)
    policies = Informer(store, registry.PROPAGATION_POLICY)
    cluster_policies = Informer(store, registry.CLUSTER_PROPAGATION_POLICY)
    bindings = Informer(store, registry.RESOURCE_BINDING)
    for informer in (policies, cluster_policies):
        informer.add_indexer(SELECTOR_INDEX, policy_match.selector_index)
    async with in_background(policies.run()), in_background(cluster_policies.run()):
        await policies.wait_synced()
        await cluster_policies.wait_synced()
        # Synced, then its watch stopped: it hears of nothing the detector does not tell it.
        async with in_background(bindings.run()):
            await bindings.wait_synced()
        detector = TemplateReconciler(store, RealClock(), policies, cluster_policies,
                                      bindings={registry.RESOURCE_BINDING.kind: bindings})
        key = "apps/v1/Deployment:default/nginx"
        await detector.reconcile(key)
        assert await store.try_get(registry.RESOURCE_BINDING, "default", "nginx-deployment") is not None
        await store.delete(DEPLOYMENT, "default", "nginx")
        await detector.reconcile(key)
    # Deleted (its finalizer, the executor's, holds it until its Works are gone).
    left = await store.try_get(registry.RESOURCE_BINDING, "default", "nginx-deployment")
    assert left is None or left.metadata.HasField("deletion_timestamp")
