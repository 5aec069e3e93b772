"""A template kind's informer lives while something names the kind: a policy selecting a typo'd
kind starts one; once no policy selects it (and no binding refers to it) the sweep stops it, with
its watch and cache; naming it again starts a new one."""

from __future__ import annotations

import asyncio

from flotilla.aio.clock import RealClock
from flotilla.api import codec
from flotilla.store import MemoryStore
from services.executor.controllers import ExecutorControllers
from services.executor.template_informers import needed_resources
from tests.background import in_background


def policy(kind: str) -> object:
    return codec.from_dict({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": f"p-{kind.lower()}", "namespace": "default"},
        "spec": {"resourceSelectors": [{"apiVersion": "example.com/v1", "kind": kind}],
                 "placement": {"clusterAffinity": {"clusterNames": ["member1"]}}}})


async def eventually(check: object, timeout: float = 30.0) -> None:
    async with asyncio.timeout(timeout):
        while not check():  # type: ignore[operator]
            await asyncio.sleep(0.01)


async def test_an_informer_nothing_needs_is_stopped_and_comes_back_when_named() -> None:
    store = MemoryStore()
    controllers = ExecutorControllers(store, RealClock())
    async with in_background(controllers.run()):
        created = await store.create(policy("Widget"))
        await eventually(lambda: "widgets.example.com" in controllers.templates)
        informers = len(controllers.manager.informers)
        assert await controllers.sweep.sweep() == []  # still selected
        await store.delete(type(created), "default", created.metadata.name)
        await eventually(lambda: not controllers.policies.list())
        assert await controllers.sweep.sweep() == ["widgets.example.com"]
        assert "widgets.example.com" not in controllers.templates
        assert len(controllers.manager.informers) == informers - 1
        await store.create(policy("Widget"))
        await eventually(lambda: "widgets.example.com" in controllers.templates)


def test_what_is_needed() -> None:
    selected = policy("Widget")
    assert needed_resources([selected], [], []) == {"widgets.example.com"}  # type: ignore[list-item]
    assert needed_resources([], [], [("v1", "ConfigMap")]) == {"configmaps"}
    assert needed_resources([], [], [("work.karmada.io/v1alpha2", "ResourceBinding")]) == set()
