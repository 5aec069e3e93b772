"""A template kind's informer lives while something names the kind: a policy selecting a typo'd
kind starts one; once no policy selects it (and no binding refers to it) the sweep stops it, with
its watch and cache; naming it again starts a new one."""

from __future__ import annotations

import asyncio

import pytest

from flotilla.aio.clock import RealClock
from flotilla.api import codec
from flotilla.api.v1 import work_pb2
from flotilla.store import MemoryStore
from flotilla.store import informer as informer_module
from services.executor.controllers import ExecutorControllers
from services.executor.template_informers import needed_resources, template_resource
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


def binding_of(api_version: str, kind: str, name: str = "b") -> work_pb2.ResourceBinding:
    return codec.from_dict({  # type: ignore[return-value]
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"resource": {"apiVersion": api_version, "kind": kind, "namespace": "default", "name": name}}})


def test_what_is_needed() -> None:
    selected = policy("Widget")
    assert needed_resources([selected], [], []) == {"widgets.example.com"}  # type: ignore[list-item]
    assert needed_resources([], [], [("v1", "ConfigMap")]) == {"configmaps"}
    assert needed_resources([], [], [("work.karmada.io/v1alpha2", "ResourceBinding")]) == set()
    assert needed_resources([], ["deployments.apps"], []) == {"deployments.apps"}


def test_the_template_resource_of_a_binding() -> None:
    assert template_resource(binding_of("apps/v1", "Deployment")) == ["deployments.apps"]
    assert template_resource(binding_of("v1", "ConfigMap")) == ["configmaps"]
    assert template_resource(binding_of("example.com/v1", "Widget")) == ["widgets.example.com"]
    # Not a template kind: nothing to keep an informer for.
    assert template_resource(binding_of("work.karmada.io/v1alpha2", "ResourceBinding")) == []


async def test_a_sweep_keeps_what_bindings_name_and_decodes_none_of_them(monkeypatch: pytest.MonkeyPatch) -> None:
    # The executor's informers keep objects as bytes: a sweep that read every binding would decode
    # them all at once, every period.
    store = MemoryStore()
    controllers = ExecutorControllers(store, RealClock())
    async with in_background(controllers.run()):
        for i in range(3):
            await store.create(binding_of("example.com/v1", "Widget", f"w{i}"))
        await eventually(lambda: len(controllers.bindings["ResourceBinding"].keys()) == 3
                         and "widgets.example.com" in controllers.templates)
        decoded = []
        real = informer_module.decode_object

        def counting(*args: object, **kwargs: object) -> object:
            decoded.append(args)
            return real(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(informer_module, "decode_object", counting)
        assert await controllers.sweep.sweep() == []  # the bindings still name Widgets
        assert decoded == []
        assert "widgets.example.com" in controllers.templates
