"""The detector decides from its informers once they are synced: a template's change becomes
its binding's without reading either from the store, and a decision made on a stale copy is
made again on what the store holds."""

from __future__ import annotations

import json
from collections import Counter

from flotilla.api import registry
from flotilla.api.v1 import meta_pb2, work_pb2
from flotilla.store import MemoryStore
from flotilla.store.base import KeyValue, copy_of
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
