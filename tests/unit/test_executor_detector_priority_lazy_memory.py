"""The detector's schedulePriority and activationPreference: Lazy, on a MemoryStore with the
reconciler called directly (each decision made exactly when the test says; issue 36):

- a policy's `schedulePriority` (KubePriorityClass) becomes the binding's
  `spec.schedulePriority.priority`, the named PriorityClass's `value`; an unknown one is
  Karmada's ApplyPolicyFailed (a Warning event, no binding) until it appears;
- a Lazy policy's edit reaches an existing binding only at its template's next change, and a
  Lazy policy made after the detector saw the template binds it only then, as in Karmada."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from flotilla.aio.clock import RealClock
from flotilla.api import codec, registry
from flotilla.api.v1 import core_pb2, meta_pb2, work_pb2
from flotilla.rules.binding_builder import build_binding, priority_class_value
from flotilla.store import MemoryStore
from flotilla.store.base import copy_of
from flotilla.store.events import EventRecorder
from flotilla.store.informer import Informer
from services.executor import policy_match
from services.executor.detector import SELECTOR_INDEX, PriorityClassNotFound, TemplateReconciler, template_key_of
from tests.background import in_background
from tests.unit.test_executor_binding_flow_memory import DEPLOYMENT, seed

pytestmark = pytest.mark.timeout(30)

BINDING = ("default", "nginx-deployment")


def priority_class(name: str, value: int) -> Any:
    return codec.from_dict({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                            "metadata": {"name": name}, "value": value, "description": "test"})


def with_schedule_priority(policy: Any, name: str) -> Any:
    policy.spec.schedule_priority.priority_class_source = "KubePriorityClass"
    policy.spec.schedule_priority.priority_class_name = name
    return policy


@contextlib.asynccontextmanager
async def detector(store: MemoryStore) -> AsyncIterator[tuple[TemplateReconciler, Informer[Any]]]:
    policies: Informer[Any] = Informer(store, registry.PROPAGATION_POLICY)
    cluster_policies: Informer[Any] = Informer(store, registry.CLUSTER_PROPAGATION_POLICY)
    for informer in (policies, cluster_policies):
        informer.add_indexer(SELECTOR_INDEX, policy_match.selector_index)
    async with in_background(policies.run()), in_background(cluster_policies.run()):
        await policies.wait_synced()
        await cluster_policies.wait_synced()
        yield TemplateReconciler(store, RealClock(), policies, cluster_policies,
                                 events=EventRecorder(store, "executor")), policies


async def caught_up(policies: Informer[Any], written: Any) -> None:
    """The policy informer holds `written` (the detector picks policies from it)."""
    key = f"{written.metadata.namespace}/{written.metadata.name}"
    async with asyncio.timeout(10):
        while (p := policies.get(key)) is None or p.metadata.resource_version != written.metadata.resource_version:
            await asyncio.sleep(0.005)


async def binding(store: MemoryStore) -> work_pb2.ResourceBinding | None:
    return await store.try_get(registry.RESOURCE_BINDING, *BINDING)


async def edit_template(store: MemoryStore, replicas: int) -> None:
    current = await store.get(DEPLOYMENT, "default", "nginx")
    changed = copy_of(current)
    content = json.loads(changed.content)
    content["spec"]["replicas"] = replicas
    changed.content = json.dumps(content).encode()
    await store.update(changed, original=current)


async def edit_policy(store: MemoryStore, policies: Informer[Any], change: Any) -> None:
    current = await store.get(registry.PROPAGATION_POLICY, "default", "nginx-propagation")
    edited = copy_of(current)
    change(edited)
    await caught_up(policies, await store.update(edited, original=current))


def only_member2(policy: Any) -> None:
    del policy.spec.placement.cluster_affinity.cluster_names[:]
    policy.spec.placement.cluster_affinity.cluster_names.append("member2")


def names(rb: work_pb2.ResourceBinding | None) -> list[str]:
    assert rb is not None
    return list(rb.spec.placement.cluster_affinity.cluster_names)


# -- schedulePriority -------------------------------------------------------------------------


async def test_the_priority_class_value_becomes_the_bindings_priority(store: MemoryStore) -> None:
    template, policy = seed()
    await store.create(priority_class("critical", 1_000_000))
    await store.create(priority_class("batch", -10))
    template = await store.create(template)
    async with detector(store) as (reconciler, policies):
        await caught_up(policies, await store.create(with_schedule_priority(policy, "critical")))
        await reconciler.reconcile(template_key_of(template))
        rb = await binding(store)
        assert rb is not None and rb.spec.HasField("schedule_priority")
        assert rb.spec.schedule_priority.priority == 1_000_000

        # A policy edit naming another class (the policy is not Lazy: at once).
        await edit_policy(store, policies, lambda p: with_schedule_priority(p, "batch"))
        await reconciler.reconcile(template_key_of(template))
        rb = await binding(store)
        assert rb is not None and rb.spec.schedule_priority.priority == -10

        # Taken off the policy, taken off the binding (Karmada copies the field, nil too).
        await edit_policy(store, policies, lambda p: p.spec.ClearField("schedule_priority"))
        await reconciler.reconcile(template_key_of(template))
        rb = await binding(store)
        assert rb is not None and not rb.spec.HasField("schedule_priority")


async def test_a_policy_without_schedule_priority_gives_none(store: MemoryStore) -> None:
    template, policy = seed()
    template = await store.create(template)
    async with detector(store) as (reconciler, policies):
        await caught_up(policies, await store.create(policy))
        await reconciler.reconcile(template_key_of(template))
        rb = await binding(store)
        assert rb is not None and not rb.spec.HasField("schedule_priority")


async def test_an_unknown_priority_class_fails_the_policy_until_it_exists(store: MemoryStore) -> None:
    template, policy = seed()
    template = await store.create(template)
    async with detector(store) as (reconciler, policies):
        await caught_up(policies, await store.create(with_schedule_priority(policy, "critical")))
        with pytest.raises(PriorityClassNotFound):
            await reconciler.reconcile(template_key_of(template))
        assert await binding(store) is None
        events = (await store.list(core_pb2.Event, "default")).items
        assert [(e.type, e.reason, e.message) for e in events] == [
            ("Warning", "ApplyPolicyFailed",
             'Apply policy(default/nginx-propagation) failed: priorityclasses.scheduling.k8s.io "critical" not found')]
        assert events[0].involved_object.kind == "Deployment"

        # The retry (the controller's backoff) finds it once it is applied.
        await store.create(priority_class("critical", 7))
        await reconciler.reconcile(template_key_of(template))
        rb = await binding(store)
        assert rb is not None and rb.spec.schedule_priority.priority == 7


# -- activationPreference: Lazy ---------------------------------------------------------------


async def test_a_lazy_policy_edit_waits_for_the_templates_next_change(store: MemoryStore) -> None:
    template, policy = seed()
    policy.spec.activation_preference = "Lazy"
    await store.create(priority_class("critical", 1000))
    template = await store.create(template)
    key = template_key_of(template)
    async with detector(store) as (reconciler, policies):
        await caught_up(policies, await store.create(policy))
        await reconciler.reconcile(key)  # the detector's first look: binds it
        first = await binding(store)
        assert names(first) == ["member1", "member2"] and first is not None and first.spec.replicas == 3

        def edit(p: Any) -> None:
            only_member2(p)
            with_schedule_priority(p, "critical")

        await edit_policy(store, policies, edit)
        for _ in range(2):  # however often the policy's change brings the template back
            await reconciler.reconcile(key)
        assert await binding(store) == first

        await edit_template(store, replicas=5)
        await reconciler.reconcile(key)
        rb = await binding(store)
        assert names(rb) == ["member2"]
        assert rb is not None and rb.spec.replicas == 5 and rb.spec.schedule_priority.priority == 1000


async def test_a_policy_made_lazy_is_lazy_from_that_edit_and_eager_again_when_unset(store: MemoryStore) -> None:
    template, policy = seed()
    template = await store.create(template)
    key = template_key_of(template)
    async with detector(store) as (reconciler, policies):
        await caught_up(policies, await store.create(policy))
        await reconciler.reconcile(key)
        first = await binding(store)

        def lazy_and_member2(p: Any) -> None:
            p.spec.activation_preference = "Lazy"
            only_member2(p)

        await edit_policy(store, policies, lazy_and_member2)
        await reconciler.reconcile(key)
        assert await binding(store) == first

        await edit_policy(store, policies, lambda p: setattr(p.spec, "activation_preference", ""))
        await reconciler.reconcile(key)
        assert names(await binding(store)) == ["member2"]


async def test_a_lazy_policy_made_after_the_template_binds_it_at_its_next_change(store: MemoryStore) -> None:
    template, policy = seed()
    policy.spec.activation_preference = "Lazy"
    template = await store.create(template)
    key = template_key_of(template)
    async with detector(store) as (reconciler, policies):
        await reconciler.reconcile(key)  # no policy yet
        await caught_up(policies, await store.create(policy))
        await reconciler.reconcile(key)
        assert await binding(store) is None

        await edit_template(store, replicas=4)
        await reconciler.reconcile(key)
        rb = await binding(store)
        assert rb is not None and rb.spec.replicas == 4


async def test_a_lazy_policy_applies_at_a_fresh_detectors_first_look(store: MemoryStore) -> None:
    """As Karmada's restarted detector (its initial list enqueues every template as a change)."""
    template, policy = seed()
    policy.spec.activation_preference = "Lazy"
    template = await store.create(template)
    key = template_key_of(template)
    async with detector(store) as (reconciler, policies):
        await caught_up(policies, await store.create(policy))
        await reconciler.reconcile(key)
        await edit_policy(store, policies, only_member2)
        await reconciler.reconcile(key)
        assert names(await binding(store)) == ["member1", "member2"]
    async with detector(store) as (restarted, policies):
        await restarted.reconcile(key)
        assert names(await binding(store)) == ["member2"]


@pytest.mark.parametrize(("document", "expected"), [
    ({"value": 1000}, 1000), ({"value": -5}, -5), ({}, 0), ({"value": "high"}, 0), ({"value": True}, 0),
])
def test_priority_class_value(document: dict[str, Any], expected: int) -> None:
    pc = codec.from_dict({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                          "metadata": {"name": "p"}, **document})
    assert isinstance(pc, meta_pb2.Unstructured)
    assert priority_class_value(pc) == expected


def test_build_binding_sets_the_priority_only_for_a_policy_that_asks() -> None:
    template, policy = seed()
    assert not build_binding(template, policy, 50).spec.HasField("schedule_priority")
    built = build_binding(template, with_schedule_priority(policy, "x"), 50)
    assert built.spec.schedule_priority.priority == 50
