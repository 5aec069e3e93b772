"""The executor's binding side shared by bucket (services/executor/__main__.py `share`): on a
MemoryStore, an ExecutorControllers that holds half the buckets makes the bindings of only the
templates in them; taking the other half (`sharded()`, as the shard coordinator does) finds every
template of those buckets from the indices, and a released bucket waits for its keys in flight."""

from __future__ import annotations

import asyncio

from flotilla.aio.clock import RealClock
from flotilla.api import keys, registry
from flotilla.runtime.sharing import buckets, key_bucket
from flotilla.store import MemoryStore
from services.executor.controllers import ExecutionManager, ExecutorControllers
from services.executor.detector import template_key
from tests.background import in_background
from tests.unit.test_executor_binding_flow_memory import POLICY_ID, seed

NAMES = [f"web-{i}" for i in range(40)]


def deployment(name: str) -> object:
    template, _ = seed()
    template.metadata.name = name
    return template


def policy() -> object:
    _, found = seed()
    del found.spec.resource_selectors[:]
    found.spec.resource_selectors.add(api_version="apps/v1", kind="Deployment")
    found.metadata.labels["propagationpolicy.karmada.io/permanent-id"] = POLICY_ID
    return found


def bucket_of_template(name: str) -> str:
    return key_bucket(template_key("apps/v1", "Deployment", "default", name))


async def bound(store: MemoryStore) -> set[str]:
    found = await store.list(registry.RESOURCE_BINDING, "default")
    return {b.spec.resource.name for b in found.items}


async def until(condition: object, what: str, within: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not await condition():  # type: ignore[operator]
        assert asyncio.get_running_loop().time() < deadline, what
        await asyncio.sleep(0.02)


async def test_only_the_held_buckets_are_worked_on_and_a_bucket_taken_finds_all_its_templates(
        store: MemoryStore) -> None:
    half = set(buckets()[: len(buckets()) // 2])
    held = set(half)
    controllers = ExecutorControllers(store, RealClock(), owns=lambda b: b in held)
    mine = {n for n in NAMES if bucket_of_template(n) in half}
    assert mine and mine != set(NAMES)
    async with in_background(controllers.run()):
        await store.create(policy())
        for name in NAMES:
            await store.create(deployment(name))

        async def made_mine() -> bool:
            return await bound(store) >= mine

        await until(made_mine, "the held buckets' templates got bindings")
        await controllers.detector.queue.drained(lambda _: True)
        assert await bound(store) == mine, "a template of a bucket not held was acted on"

        taken = sorted(set(buckets()) - half)
        held.update(taken)
        for bucket in taken:
            for part in controllers.sharded():
                await part.acquire(bucket)

        async def made_all() -> bool:
            return await bound(store) == set(NAMES)

        await until(made_all, "every template got its binding once its bucket was taken")
        key = keys.object_key("default", keys.binding_name("web-0", "Deployment"))
        assert controllers.bindings["ResourceBinding"].get(key) is not None


def test_the_execution_side_queues_only_the_works_of_its_clusters(store: MemoryStore) -> None:
    async def connect(_: object) -> object:
        raise AssertionError("nothing is applied here")

    execution = ExecutionManager(store, RealClock(), connect, lambda _: True,  # type: ignore[arg-type]
                                 owns=lambda cluster: cluster == "member1")
    for controller in (execution.execution, execution.status):
        for key in ("karmada-es-member1/web-1", "karmada-es-member2/web-2", "default/not-a-work"):
            controller.enqueue(key)
        assert len(controller.queue) == 1, controller.name
