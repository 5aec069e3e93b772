"""The executor's control-plane side wired together: informers, the detector, the dependencies
distributor, the binding controller and the binding-status controller, and the event routing
between them.

A plain class, so tests run it in-process with a store and a clock, stop it at any moment,
and start a fresh one as a restarted service would.

Which template kinds are watched: templates are stored per kind, so there is no single place
to watch them all. A kind is watched from the moment something gives a reason to: a
PropagationPolicy or ClusterPropagationPolicy selects it, a binding names it (so a template
deleted while the executor was down still takes its binding with it), or — for ConfigMap,
Secret, ServiceAccount and PersistentVolumeClaim — a binding propagates its dependencies.
A kind no policy or binding mentions cannot need a binding, so nothing is lost by not
watching it. A kind, once watched, is watched until the executor stops.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace

from flotilla.api import keys, registry
from flotilla.api.v1 import policy_pb2
from flotilla.binding_builder import template_content
from flotilla.runtime.clock import Clock
from flotilla.runtime.controller import Controller
from flotilla.runtime.workqueue import WorkQueue
from flotilla.store import Store
from flotilla.store.events import EventRecorder
from flotilla.store.informer import EventType, Informer
from services.executor import dependencies, policy_match, works
from services.executor.binding_controller import (
    DIRECTLY_REQUEUE_SECONDS,
    BindingReconciler,
    binding_key,
    binding_ref_of_work,
    index_works,
)
from services.executor.binding_status import BindingStatusReconciler
from services.executor.detector import (
    CLAIM_INDEX,
    CPP_FINALIZER,
    DEPENDED_BY_INDEX,
    DEPENDENCIES_INDEX,
    NAMESPACE_INDEX,
    PP_FINALIZER,
    DependencyReconciler,
    DetectorConfig,
    PolicyFinalizerReconciler,
    TemplateReconciler,
    policy_key,
    template_key,
    template_key_of,
    template_key_of_binding,
)

# Karmada's defaults: StatefulFailoverInjection is alpha and off, PropagateDeps beta and on,
# PropagationPolicyPreemption alpha and off.
DEFAULT_GATES: dict[str, bool] = {
    "StatefulFailoverInjection": False,
    "PropagateDeps": True,
    "PropagationPolicyPreemption": False,
}
DEPENDENT_KINDS = (("v1", "ConfigMap"), ("v1", "Secret"), ("v1", "ServiceAccount"), ("v1", "PersistentVolumeClaim"))


@dataclass(frozen=True)
class ExecutorConfig:
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    skipped_namespaces: tuple[str, ...] = policy_match.DEFAULT_SKIPPED_NAMESPACES
    # Karmada's --concurrent-resourcebinding-syncs, for each of the executor's controllers.
    workers: int = 5
    directly_requeue: float = DIRECTLY_REQUEUE_SECONDS

    def gate(self, name: str) -> bool:
        return {**DEFAULT_GATES, **self.feature_gates}[name]


def _object_key(obj: Any) -> str:
    return keys.object_key(obj.metadata.namespace, obj.metadata.name)


def _deleting(obj: Any) -> bool:
    return obj is not None and works.is_deleting(obj)


def _template_spec(template: Any) -> dict[str, Any]:
    content = template_content(template)
    content.pop("status", None)
    return content


def specification_changed(old: Any, new: Any) -> bool:
    """Karmada's SpecificationChanged: anything but status and server bookkeeping."""
    return (old.metadata.labels != new.metadata.labels or old.metadata.annotations != new.metadata.annotations
            or old.metadata.uid != new.metadata.uid or _deleting(old) != _deleting(new)
            or old.metadata.owner_references != new.metadata.owner_references
            or _template_spec(old) != _template_spec(new))


class ExecutorControllers:
    def __init__(self, store: Store, clock: Clock, config: ExecutorConfig | None = None,
                 events: EventRecorder | None = None, tracer: trace.Tracer | None = None) -> None:
        self.store = store
        self.clock = clock
        self.config = config = config or ExecutorConfig()
        self.policies = Informer(store, registry.PROPAGATION_POLICY)
        self.policies.add_indexer(NAMESPACE_INDEX, lambda p: [p.metadata.namespace])
        self.cluster_policies = Informer(store, registry.CLUSTER_PROPAGATION_POLICY)
        self.bindings = {rt.kind: Informer(store, rt)
                         for rt in (registry.RESOURCE_BINDING, registry.CLUSTER_RESOURCE_BINDING)}
        for informer in self.bindings.values():
            informer.add_indexer(CLAIM_INDEX, lambda b: [c.key] if (c := policy_match.claim_of(b.metadata)) else [])
        self.bindings[registry.RESOURCE_BINDING.kind].add_indexer(DEPENDED_BY_INDEX, dependencies.depended_by)
        self.works = Informer(store, registry.WORK)
        index_works(self.works)
        # By etcd resource: every version of a kind lives under one prefix, so one informer serves them all.
        self.templates: dict[str, Informer] = {}
        self._tasks: dict[Informer, asyncio.Task[None]] = {}
        self._running = False

        def controller(name: str, reconciler: Any, workers: int = config.workers) -> Controller:
            return Controller(name, reconciler, WorkQueue(clock, name), workers=workers)

        self.detector = controller("detector", TemplateReconciler(
            store, clock, self.policies, self.cluster_policies,
            DetectorConfig(config.skipped_namespaces, config.gate("PropagationPolicyPreemption")), events))
        self.distributor = controller("dependencies-distributor", DependencyReconciler(
            store, clock, self.bindings[registry.RESOURCE_BINDING.kind], config.gate("PropagateDeps")))
        self.policy_finalizers = controller("policy-finalizer", PolicyFinalizerReconciler(store, clock), workers=1)
        self.binding_controller = controller("binding", BindingReconciler(
            store, clock, self.works, config.gate("StatefulFailoverInjection"), events, tracer,
            config.directly_requeue))
        self.binding_status = controller("binding-status", BindingStatusReconciler(
            store, clock, self.bindings, self.works))
        self.policies.add_handler(self._on_policy)
        self.cluster_policies.add_handler(self._on_policy)
        for kind, informer in self.bindings.items():
            informer.add_handler(self._binding_handler(kind))
        self.works.add_handler(self._on_work)

    @property
    def controllers(self) -> list[Controller]:
        return [self.detector, self.distributor, self.policy_finalizers, self.binding_controller, self.binding_status]

    # -- template informers ------------------------------------------------------------------

    def watch_templates(self, api_version: str, kind: str) -> Informer | None:
        """The informer of a template kind, started on first use; None for a built-in kind."""
        try:
            rt = registry.for_kind(api_version, kind)
        except registry.UnknownResourceError:
            return None
        if not rt.is_template:
            return None
        informer = self.templates.get(rt.resource)
        if informer is None:
            informer = Informer(self.store, rt)
            informer.add_indexer(DEPENDENCIES_INDEX, lambda t: [
                template_key(*dep) for dep in dependencies.dependencies(t)])
            informer.add_handler(self._on_template)
            self.templates[rt.resource] = informer
            if self._running:
                self._start(informer)
        return informer

    def _watch_dependents(self) -> None:
        if self.config.gate("PropagateDeps"):
            for api_version, kind in DEPENDENT_KINDS:
                self.watch_templates(api_version, kind)

    def _start(self, informer: Informer) -> None:
        if informer not in self._tasks:
            self._tasks[informer] = asyncio.create_task(informer.run(), name=f"informer-{informer.rt.resource}")

    # -- event routing -----------------------------------------------------------------------

    def _on_policy(self, kind: EventType, policy: Any, old: Any) -> None:
        if (kind == EventType.MODIFIED and old.spec == policy.spec and old.metadata.labels == policy.metadata.labels
                and _deleting(old) == _deleting(policy)):
            return
        for version in (policy, old):
            if version is None:
                continue
            namespace = (version.metadata.namespace if isinstance(version, policy_pb2.PropagationPolicy)
                         else None)
            for selector in version.spec.resource_selectors:
                informer = self.watch_templates(selector.api_version, selector.kind)
                for template in informer.list() if informer is not None else []:
                    if namespace is None or template.metadata.namespace == namespace:
                        self.detector.enqueue(template_key_of(template))
        # Templates it claimed, whatever its selectors say now.
        for informer in self.bindings.values():
            for binding in informer.by_index(CLAIM_INDEX, policy_key(policy)):
                self.detector.enqueue(template_key_of_binding(binding))
        if kind != EventType.DELETED and _deleting(policy) and (
                PP_FINALIZER in policy.metadata.finalizers or CPP_FINALIZER in policy.metadata.finalizers):
            self.policy_finalizers.enqueue(policy_key(policy))

    def _on_template(self, kind: EventType, template: Any, old: Any) -> None:
        if kind == EventType.MODIFIED and not specification_changed(old, template):
            return  # a status write (ours, aggregating) changes nothing a binding holds
        key = template_key_of(template)
        self.detector.enqueue(key)
        # The binding records the template's version only along with a change of its own (see
        # detector.merge_binding): the Works and the dependents follow the template directly.
        namespace = template.metadata.namespace
        binding_kind = registry.RESOURCE_BINDING if namespace else registry.CLUSTER_RESOURCE_BINDING
        binding = binding_key(binding_kind.kind, keys.object_key(
            namespace, keys.binding_name(template.metadata.name, template.kind)))
        self.binding_controller.enqueue(binding)
        if namespace:
            self.distributor.enqueue(binding)
        # Workloads whose dependencies include this template get their attached bindings redone.
        for informer in self.templates.values():
            for referrer in informer.by_index(DEPENDENCIES_INDEX, key):
                name = keys.binding_name(referrer.metadata.name, referrer.kind)
                self.distributor.enqueue(binding_key(registry.RESOURCE_BINDING.kind,
                                                     keys.object_key(referrer.metadata.namespace, name)))

    def _binding_handler(self, kind_name: str) -> Callable[[EventType, Any, Any], None]:
        def handle(kind: EventType, binding: Any, old: Any) -> None:
            key = binding_key(kind_name, _object_key(binding))
            lifecycle = kind != EventType.MODIFIED or _deleting(old) != _deleting(binding)
            generation = lifecycle or old.metadata.generation != binding.metadata.generation
            resource = binding.spec.resource
            if kind != EventType.MODIFIED and self.watch_templates(resource.api_version, resource.kind) is not None:
                # At start: its template may be gone. Once gone itself: its template may want a new one.
                self.detector.enqueue(template_key_of_binding(binding))
            if generation or old.metadata.labels != binding.metadata.labels:
                self.binding_controller.enqueue(key)
            if generation or old.status.last_scheduled_time != binding.status.last_scheduled_time:
                self.binding_status.enqueue(key)
            if kind_name != registry.RESOURCE_BINDING.kind:
                return
            if generation and (binding.spec.propagate_deps or (old is not None and old.spec.propagate_deps)):
                self._watch_dependents()
                self.distributor.enqueue(key)
            if lifecycle:
                # An attached binding that went away is made again if its workloads still need it.
                for label in dependencies.depended_by(binding):
                    namespace, _, name = binding.metadata.labels[label].partition("_")
                    self.distributor.enqueue(binding_key(kind_name, keys.object_key(namespace, name)))
        return handle

    def _on_work(self, kind: EventType, work: Any, old: Any) -> None:
        ref = binding_ref_of_work(work)
        if ref is None:
            return
        lifecycle = kind != EventType.MODIFIED or _deleting(old) != _deleting(work)
        if lifecycle or old.spec != work.spec or old.metadata.labels != work.metadata.labels:
            self.binding_controller.enqueue(ref)
        if lifecycle or old.status != work.status or old.metadata.annotations != work.metadata.annotations:
            # The annotations say which template generation the member was given.
            self.binding_status.enqueue(ref)

    # -- running -----------------------------------------------------------------------------

    async def run(self) -> None:
        """Run until cancelled."""
        self._running = True
        base = [self.policies, self.cluster_policies, *self.bindings.values(), self.works]
        for informer in [*base, *self.templates.values()]:
            self._start(informer)
        try:
            for informer in base:
                await informer.wait_synced()
            await asyncio.gather(*(c.run() for c in self.controllers))
        finally:
            for c in self.controllers:
                await c.stop()
            tasks = list(self._tasks.values())
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._running = False
