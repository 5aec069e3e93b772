"""The executor's wiring, on a Manager, with the event routing between its controllers in
routing.py:
- the control-plane side (ExecutorControllers): informers, the detector, the dependencies
  distributor, the binding controller and the binding-status controller;
- the execution side (ExecutionManager): Works -> member objects, member status -> Works, used
  by the executor service for Push clusters and by the Pull-mode agent for its own cluster.

Plain classes, so tests run them in-process with a store and a clock, stop them at any moment,
and start fresh ones as a restarted service would.

Which template kinds are watched: templates are stored per kind, so there is no single place
to watch them all. A kind is watched from the moment something gives a reason to: a
PropagationPolicy or ClusterPropagationPolicy selects it, a binding names it (so a template
deleted while the executor was down still takes its binding with it), or — for ConfigMap,
Secret, ServiceAccount and PersistentVolumeClaim — a binding propagates its dependencies.
A kind no policy or binding mentions cannot need a binding, so nothing is lost by not
watching it. A kind, once watched, is watched until the executor stops.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from opentelemetry import trace

from flotilla.aio.clock import Clock
from flotilla.api import bindings, registry
from flotilla.api.bindings import Binding, binding_key
from flotilla.api.events import WatchEvent
from flotilla.api.keys import cluster_of_execution_namespace, execution_namespace, object_key
from flotilla.api.v1 import cluster_pb2, config_pb2, meta_pb2
from flotilla.interpreter.customized import CustomizedInterpreter
from flotilla.interpreter.health import HealthInterpreter
from flotilla.interpreter.lua import DEFAULT_TIMEOUT
from flotilla.interpreter.pool import DEFAULT_WORKERS, ScriptPool
from flotilla.member.watches import Connect, Kind, MemberWatches
from flotilla.runtime.concurrency import BINDING_SYNCS, WORK_SYNCS
from flotilla.runtime.controller import Controller, Reconciler
from flotilla.runtime.manager import Manager
from flotilla.runtime.sharing import (
    Owned,
    ShardedControllers,
    binding_keys_in_bucket,
    cache_keys_in_bucket,
    index_binding_buckets,
    index_buckets,
    keys_in_bucket,
)
from flotilla.store import ObjectStore
from flotilla.store.base import object_key_of
from flotilla.store.events import EventRecorder
from flotilla.store.informer import Informer
from services.executor import dependencies, policy_match, routing
from services.executor.applied import AppliedGenerations
from services.executor.binding_controller import DIRECTLY_REQUEUE_SECONDS, BindingReconciler, index_works
from services.executor.binding_status import BindingStatusReconciler
from services.executor.dependency_distributor import DEPENDED_BY_INDEX, DependencyReconciler
from services.executor.detector import (
    CLAIM_INDEX,
    DEPENDENCIES_INDEX,
    SELECTOR_INDEX,
    DetectorConfig,
    TemplateReconciler,
    policy_key,
    template_key_of,
    template_key_of_binding,
)
from services.executor.execution import ExecutionReconciler
from services.executor.metrics import count_interpreter_call
from services.executor.overrides import informer_overrider
from services.executor.policy_finalizers import PolicyFinalizerReconciler
from services.executor.rebalancer import add_rebalancer
from services.executor.routing import RB
from services.executor.template_informers import TemplateInformerSweep
from services.executor.work_status import MEMBER_OBJECT_INDEX, WorkStatusReconciler, member_objects_of

# Karmada's defaults: StatefulFailoverInjection is alpha and off, PropagateDeps beta and on,
# PropagationPolicyPreemption and MultiplePodTemplatesScheduling alpha and off.
DEFAULT_GATES: dict[str, bool] = {
    "StatefulFailoverInjection": False,
    "PropagateDeps": True,
    "PropagationPolicyPreemption": False,
    "MultiplePodTemplatesScheduling": False,
}
# Both policy kinds' informers are routed alike.
P = TypeVar("P", bound=policy_match.Policy)
# Templates and bindings indexed by the bucket of the detector's key (a template's).
TEMPLATE_BUCKET_INDEX = "template-bucket"
DEPENDENT_KINDS = (("v1", "ConfigMap"), ("v1", "Secret"), ("v1", "ServiceAccount"), ("v1", "PersistentVolumeClaim"))


@dataclass(frozen=True)
class ExecutorConfig:
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    skipped_namespaces: tuple[str, ...] = policy_match.DEFAULT_SKIPPED_NAMESPACES
    # --concurrent-resourcebinding-syncs, for each of the executor's controllers.
    workers: int = BINDING_SYNCS
    directly_requeue: float = DIRECTLY_REQUEUE_SECONDS

    def gate(self, name: str) -> bool:
        return {**DEFAULT_GATES, **self.feature_gates}[name]


class ExecutorControllers:
    def __init__(self, store: ObjectStore, clock: Clock, config: ExecutorConfig | None = None,
                 events: EventRecorder | None = None, tracer: trace.Tracer | None = None,
                 manager: Manager | None = None, interpreter_timeout: float = DEFAULT_TIMEOUT,
                 interpreter_workers: int = DEFAULT_WORKERS, owns: Callable[[str], bool] | None = None) -> None:
        """`owns(bucket)`: whether this replica holds the bucket (flotilla.runtime.sharing) of a
        key now; every controller here reconciles only the keys of the buckets it holds. Without
        it, every key."""
        self.config = config = config or ExecutorConfig()
        self.manager = manager = manager or Manager(store, clock, compact_informers=True)

        def own(reconciler: Reconciler) -> Reconciler:
            return reconciler if owns is None else Owned(reconciler, owns)
        # The customizations' replicaResource, replicaRevision, statusAggregation and
        # dependencyInterpretation scripts, which the detector, the binding controller, the
        # binding-status controller and the dependencies distributor run. A pool of its
        # own (the execution side's runs health and statusReflection scripts): its workers start at
        # the first call, so a plane without such scripts runs none.
        self.customizations = manager.informer(registry.RESOURCE_INTERPRETER_CUSTOMIZATION)
        self.scripts = ScriptPool(interpreter_workers, timeout=interpreter_timeout, on_call=count_interpreter_call)
        manager.add_runnable("binding-interpreter-pool", self.scripts.run)
        self.interpreter = CustomizedInterpreter(runner=self.scripts)
        self.policies = manager.informer(registry.PROPAGATION_POLICY)
        self.cluster_policies = manager.informer(registry.CLUSTER_PROPAGATION_POLICY)
        for policies in (self.policies, self.cluster_policies):
            policies.add_indexer(SELECTOR_INDEX, policy_match.selector_index)
        self.bindings: dict[str, Informer[Binding]] = {
            kind.kind: manager.informer(kind.resource_type) for kind in bindings.BINDING_KINDS}
        for informer in self.bindings.values():
            informer.add_indexer(CLAIM_INDEX, lambda b: [c.key] if (c := policy_match.claim_of(b.metadata)) else [])
        self.bindings[RB].add_indexer(DEPENDED_BY_INDEX, dependencies.depended_by)
        self.works = manager.informer(registry.WORK)
        index_works(self.works)
        # By etcd resource: every version of a kind lives under one prefix, so one informer serves them all.
        self.templates: dict[str, Informer[meta_pb2.Unstructured]] = {}
        # What the binding controller needs to build each cluster's overridden manifest.
        self.clusters = manager.informer(registry.CLUSTER)
        self.override_policies = manager.informer(registry.OVERRIDE_POLICY)
        self.cluster_override_policies = manager.informer(registry.CLUSTER_OVERRIDE_POLICY)

        self.template_reconciler = TemplateReconciler(
            store, clock, self.policies, self.cluster_policies,
            DetectorConfig(config.skipped_namespaces, config.gate("PropagationPolicyPreemption"),
                           config.gate("MultiplePodTemplatesScheduling")), events,
            self.templates, self.bindings, self.interpreter, self.customizations.unknown)
        self.detector = manager.controller("detector", own(self.template_reconciler), workers=config.workers)
        self.distributor = manager.controller("dependencies-distributor", own(DependencyReconciler(
            store, clock, self.bindings[RB], config.gate("PropagateDeps"), self.templates, self.interpreter, events)),
            workers=config.workers)
        self.policy_finalizers = manager.controller("policy-finalizer", own(PolicyFinalizerReconciler(store, clock)))
        self.binding_reconciler = BindingReconciler(
            store, self.works, config.gate("StatefulFailoverInjection"), events, tracer,
            config.directly_requeue, clock, self.bindings, self.templates,
            informer_overrider(self.clusters, self.cluster_override_policies, self.override_policies),
            self.interpreter)
        self.binding_controller = manager.controller("binding", own(self.binding_reconciler), workers=config.workers)
        self.binding_status = manager.controller("binding-status", own(BindingStatusReconciler(
            store, clock, self.bindings, self.works, self.templates, self.interpreter, events)),
            workers=config.workers)
        # The bucket of each object's key for each controller, so a bucket taken over is read
        # from the indices (see `sharded`).
        index_binding_buckets(self.bindings)
        for informer in self.bindings.values():
            index_buckets(informer, template_key_of_binding, TEMPLATE_BUCKET_INDEX)
        index_buckets(self.policies, policy_key)
        index_buckets(self.cluster_policies, policy_key)

        self._route_policies(self.policies)
        self._route_policies(self.cluster_policies)
        # An override policy's change rewrites the Works of the templates it selects.
        manager.watch(self.override_policies, routing.bindings_of_overridden(self.templates),
                      self.binding_controller, predicate=routing.override_policy_changed)
        manager.watch(self.cluster_override_policies, routing.bindings_of_overridden(self.templates),
                      self.binding_controller, predicate=routing.override_policy_changed)
        # A Cluster's labels or fields changing may change which override rules target it.
        manager.watch(self.clusters, routing.bindings_in_cluster(self.works), self.binding_controller,
                      predicate=lambda event: routing.cluster_selection_changed(event) and bool(
                          self.override_policies.keys() or self.cluster_override_policies.keys()))
        for kind, informer in self.bindings.items():
            manager.on_event(informer, self._watch_kind_of_binding, predicate=routing.came_or_went)
            manager.watch(informer, routing.template_of_binding, self.detector,
                          predicate=routing.binding_came_or_went_elsewhere(self.template_reconciler.created))
            manager.watch(informer, routing.binding(kind), self.binding_controller,
                          predicate=routing.binding_spec_changed)
            manager.watch(informer, routing.binding(kind), self.binding_status, predicate=routing.binding_scheduled)
        rbs = self.bindings[RB]
        manager.on_event(rbs, self._watch_dependents, predicate=routing.propagates_deps)
        self.sweep = TemplateInformerSweep(manager, clock, self.templates, [self.policies, self.cluster_policies],
                                           self.bindings, self._dependent_kinds)
        manager.add_runnable("template-informer-sweep", self.sweep.run)
        manager.watch(rbs, routing.binding(RB), self.distributor, predicate=routing.propagates_deps)
        manager.watch(rbs, routing.workloads_depending_on, self.distributor)
        own_writes = self.binding_reconciler.own_writes
        manager.watch(self.works, routing.binding_of_work, self.binding_controller,
                      predicate=lambda event: not own_writes.echo(event) and routing.work_spec_changed(event))
        manager.watch(self.works, routing.binding_of_work, self.binding_status, predicate=routing.work_status_changed)
        manager.on_event(self.customizations, self._on_customization)
        # WorkloadRebalancer: a manual reschedule of the workloads it names (rebalancer.py).
        self.rebalancers, self.rebalancer = add_rebalancer(manager, store, clock, own)
        index_buckets(self.rebalancers, object_key_of)

    def _on_customization(self, event: WatchEvent[config_pb2.ResourceInterpreterCustomization]) -> None:
        """New scripts: the target kind's bindings are built again (replicas), and so are their Works
        (revision), their templates' status (aggregation) and their dependents (dependencies)."""
        self.interpreter.set_customizations(self.customizations.list())
        target = event.obj.spec.target
        for kind, informer in self.bindings.items():
            for binding in informer.list():
                resource = binding.spec.resource
                if (resource.api_version, resource.kind) == (target.api_version, target.kind):
                    self.detector.enqueue(template_key_of_binding(binding))
                    meta = binding.metadata
                    key = binding_key(kind, object_key(meta.namespace, meta.name))
                    self.binding_controller.enqueue(key)
                    self.binding_status.enqueue(key)
                    self.distributor.enqueue(key)

    def _route_policies(self, policies: Informer[P]) -> None:
        manager = self.manager
        # First: the watches below read the template informers it starts.
        manager.on_event(policies, self._watch_selected_kinds, predicate=routing.policy_changed)
        manager.watch(policies, routing.selected_templates(self.templates), self.detector,
                      predicate=routing.policy_changed)
        manager.watch(policies, routing.claimed_templates(self.bindings), self.detector,
                      predicate=routing.policy_changed)
        manager.watch(policies, routing.finalizing_policy, self.policy_finalizers,
                      predicate=routing.policy_changed)

    @property
    def controllers(self) -> list[Controller]:
        return [self.detector, self.distributor, self.policy_finalizers, self.binding_controller, self.binding_status]

    def sharded(self) -> list[ShardedControllers]:
        """Each controller with the keys of a bucket it may be given, for a replica that takes the bucket."""
        rbs = {RB: self.bindings[RB]}
        return [
            ShardedControllers([self.binding_controller, self.binding_status],
                               lambda b: binding_keys_in_bucket(self.bindings, b)),
            ShardedControllers([self.distributor], lambda b: binding_keys_in_bucket(rbs, b)),
            ShardedControllers([self.detector], self._template_keys),
            ShardedControllers([self.policy_finalizers], lambda b: [
                *keys_in_bucket(self.policies, b, policy_key), *keys_in_bucket(self.cluster_policies, b, policy_key)]),
            ShardedControllers([self.rebalancer], cache_keys_in_bucket(self.rebalancers)),
        ]

    def _template_keys(self, bucket: str) -> set[str]:
        """The detector's keys in the bucket: every template's, and every binding's template's
        (one whose template is gone is still looked at: the binding goes with it)."""
        found = {k for informer in list(self.templates.values())
                 for k in keys_in_bucket(informer, bucket, template_key_of, TEMPLATE_BUCKET_INDEX)}
        for informer in self.bindings.values():
            found.update(keys_in_bucket(informer, bucket, template_key_of_binding, TEMPLATE_BUCKET_INDEX))
        return found

    # -- template informers ------------------------------------------------------------------

    def watch_templates(self, api_version: str, kind: str) -> Informer[meta_pb2.Unstructured] | None:
        """The informer of a template kind, started on first use; None for a built-in kind."""
        rt = routing.template_type(api_version, kind)
        if rt is None:
            return None
        informer = self.templates.get(rt.resource)
        if informer is None:
            informer = self.manager.informer(rt)
            informer.add_indexer(DEPENDENCIES_INDEX, routing.template_dependencies)
            index_buckets(informer, template_key_of, TEMPLATE_BUCKET_INDEX)
            spec_changed = routing.template_spec_changed
            self.manager.watch(informer, routing.template, self.detector, predicate=spec_changed)
            self.manager.watch(informer, routing.binding_of_template, self.binding_controller,
                               predicate=spec_changed)
            self.manager.watch(informer, routing.dependents_of_template(self.templates), self.distributor,
                               predicate=spec_changed)
            self.templates[rt.resource] = informer
        return informer

    def _watch_selected_kinds(self, event: WatchEvent[P]) -> None:
        for api_version, kind in routing.selected_kinds(event):
            self.watch_templates(api_version, kind)

    def _watch_kind_of_binding(self, event: WatchEvent[Binding]) -> None:
        resource = event.obj.spec.resource
        self.watch_templates(resource.api_version, resource.kind)

    def _watch_dependents(self, _: object = None) -> None:
        for api_version, kind in self._dependent_kinds():
            self.watch_templates(api_version, kind)

    def _dependent_kinds(self) -> tuple[tuple[str, str], ...]:
        return DEPENDENT_KINDS if self.config.gate("PropagateDeps") else ()

    async def run(self) -> None:
        """Run until cancelled."""
        await self.manager.run()


class ExecutionManager:
    def __init__(self, store: ObjectStore, clock: Clock, connect: Connect,
                 serves: Callable[[cluster_pb2.Cluster], bool], *, only_cluster: str | None = None,
                 status_resync: float = 300.0, workers: int = WORK_SYNCS,
                 interpreter_timeout: float = DEFAULT_TIMEOUT, interpreter_workers: int = DEFAULT_WORKERS,
                 events: EventRecorder | None = None, manager: Manager | None = None,
                 owns: Callable[[str], bool] | None = None) -> None:
        """`owns(cluster)`: whether this replica's share holds the cluster now (the executor's
        replicas divide the member clusters among themselves, flotilla.store.shards); without it,
        every cluster `serves` accepts is this instance's."""
        self.manager = manager = manager or Manager(store, clock, compact_informers=True)
        owned = owns or (lambda _: True)
        self.owns = owned
        namespace = execution_namespace(only_cluster) if only_cluster else None
        self.works = manager.informer(registry.WORK, namespace=namespace)
        self.works.add_indexer(routing.WORK_NAMESPACE_INDEX, lambda w: [w.metadata.namespace])
        self.works.add_indexer(MEMBER_OBJECT_INDEX, member_objects_of)
        self.clusters = manager.informer(registry.CLUSTER)
        self.customizations = manager.informer(registry.RESOURCE_INTERPRETER_CUSTOMIZATION)
        # Lua scripts run in worker processes, started and stopped with the manager: a script that
        # never returns costs a worker, not the loop that renews the leader's lease.
        self.scripts = ScriptPool(interpreter_workers, timeout=interpreter_timeout, on_call=count_interpreter_call)
        manager.add_runnable("interpreter-pool", self.scripts.run)
        # A customization that does not decode leaves every health Unknown, not interpreted without it.
        self.interpreter = HealthInterpreter(runner=self.scripts, unreadable=self.customizations.unknown)
        # The statusReflection and retention scripts, in the same pool.
        self.reflector = CustomizedInterpreter(runner=self.scripts)
        # Shared: status is read from a member's cache only once it has seen the last apply.
        self.applied = applied = AppliedGenerations()
        self.serves = serves

        def serves_owned(cluster: cluster_pb2.Cluster) -> bool:
            return serves(cluster) and owned(cluster.metadata.name)

        self.execution = manager.controller("execution", ExecutionReconciler(
            store, clock, self.works, self.clusters, connect, serves_owned, applied, events, self.reflector,
            owns=owned,
        ), workers=workers)
        # Member status by watch: member events feed per-cluster caches and enqueue the Works
        # that carry the changed objects; the reconcile reads cache and Work, and writes status.
        self.watches = MemberWatches(clock, connect, serves_owned, self._member_changed, self._member_synced,
                                     resync=status_resync)
        self.work_status = WorkStatusReconciler(store, clock, self.works, self.clusters, self.watches,
                                                self.interpreter, events, applied, self.reflector, owns=owned)
        self.status = manager.controller("work-status", self.work_status, workers=workers)
        manager.watch(self.works, routing.work, self.execution, predicate=routing.work_apply_due)
        manager.watch(self.clusters, routing.works_of_cluster(self.works), self.execution,
                      predicate=routing.readiness_changed)
        manager.watch(self.works, routing.work, self.status, predicate=routing.work_apply_state_changed)
        manager.watch(self.clusters, routing.works_of_cluster(self.works), self.status,
                      predicate=routing.readiness_changed)
        manager.on_event(self.clusters, self.watches.on_cluster)
        manager.on_event(self.customizations, self._on_customization)
        manager.add_runnable("member-watches", self.watches.run)

    def _on_customization(self, _: WatchEvent[config_pb2.ResourceInterpreterCustomization]) -> None:
        self.interpreter.set_customizations(self.customizations.list())
        self.reflector.set_customizations(self.customizations.list())
        # Health and status are interpreted anew under the new rules.
        for key in self.works.keys():
            self.status.enqueue(key)

    def _member_changed(self, cluster: str, api_version: str, kind: str, objects: Iterable[tuple[str, str]]) -> None:
        objects = list(objects)
        for namespace, name in objects:
            self.applied.reported((cluster, api_version, kind, namespace, name))
        for key in self.work_status.works_of(cluster, api_version, kind, objects):
            self.status.enqueue(key)

    def _member_synced(self, cluster: str, _: Kind) -> None:
        # Works skipped while the kind was not yet listed (their objects may not have changed).
        for key in self.work_status.works_of_cluster(cluster):
            self.status.enqueue(key)

    def shards(self) -> list[str]:
        """The clusters whose Works this side may have to act on: every cluster it serves, and
        the execution namespaces of Works whose Cluster is gone (their deletion is still to do)."""
        names = {c.metadata.name for c in self.clusters.list() if self.serves(c)}
        for namespace in self.works.index_values(routing.WORK_NAMESPACE_INDEX):
            name = cluster_of_execution_namespace(namespace)
            if name is not None and self.clusters.get(name) is None:
                names.add(name)
        return sorted(names)

    async def acquire(self, cluster: str) -> None:
        """This replica's share now holds the cluster: look at each of its Works."""
        for key in sorted(self.works.index_keys(routing.WORK_NAMESPACE_INDEX, execution_namespace(cluster))):
            self.execution.enqueue(key)
            self.status.enqueue(key)

    async def release(self, cluster: str) -> None:
        """Stop acting on the cluster; return once nothing of it is in flight, so the next owner
        never acts on one of its Works while this replica still does."""
        self.watches.forget(cluster)
        prefix = execution_namespace(cluster) + "/"
        for controller in (self.execution, self.status):
            await controller.queue.drained(lambda key: key.startswith(prefix))

    async def run(self) -> None:
        """Until cancelled."""
        await self.manager.run()
