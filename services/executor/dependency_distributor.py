"""Karmada's dependencies distributor (propagateDeps), keyed by workload binding,
`ResourceBinding:<namespace>/<name>`: keeps the attached bindings of the workload's dependents
(see `dependencies`) in step with the workload's clusters.

A kind with a ResourceInterpreterCustomization `dependencyInterpretation` script has the
dependencies its `GetDependencies(template)` names (run in the interpreter pool) instead of the
native rule. A script without an answer changes nothing — no dependent is detached (that would
take it off every member) — records a Warning event GetDependenciesFailed on the template, and is
retried with backoff. A dependent a script names that does not exist yet is looked for again
every DEPENDENT_RECHECK seconds: the template informers' dependency index, which brings a
workload back when its dependent appears, knows only the native rules."""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Mapping

from flotilla.aio.clock import Clock
from flotilla.api import keys, registry, wellknown
from flotilla.api.bindings import Binding, parse_binding_key
from flotilla.api.v1 import meta_pb2, work_pb2
from flotilla.interpreter.customized import GET_DEPENDENCIES, CustomizedInterpreter
from flotilla.rules.binding_builder import template_object
from flotilla.runtime.controller import Result
from flotilla.store import AlreadyExists, Conflict, NotFound, ObjectStore
from flotilla.store.events import EventRecorder
from flotilla.store.informer import Informer
from services.executor import cached_read, dependencies, policy_match, works
from services.executor.binding_controller import template_type
from services.executor.detector import binds

log = logging.getLogger(__name__)

# Informer index of ResourceBindings: the attached bindings by the workload they depend on.
DEPENDED_BY_INDEX = "depended-by"
DEPENDENT_RECHECK = 10.0


class DependenciesNotInterpreted(Exception):
    """The kind's GetDependencies script gave no answer: nothing attached or detached (retried)."""


class DependencyReconciler:
    """Karmada's dependencies distributor, for ResourceBindings (dependents are namespaced)."""

    def __init__(self, store: ObjectStore, clock: Clock, bindings: Informer[Binding], enabled: bool = True,
                 templates: Mapping[str, Informer[meta_pb2.Unstructured]] | None = None,
                 interpreter: CustomizedInterpreter | None = None, events: EventRecorder | None = None) -> None:
        self.store = store
        self.clock = clock
        self.bindings = bindings
        self.enabled = enabled
        self.templates = templates if templates is not None else {}
        # The customizations' dependencyInterpretation scripts.
        self.interpreter = interpreter
        self.events = events

    async def reconcile(self, key: str) -> Result | None:
        rt, namespace, name = parse_binding_key(key)
        if rt is not registry.RESOURCE_BINDING:
            return None
        found = await cached_read.read(self.store, self.bindings, registry.RESOURCE_BINDING, namespace, name)
        independent = found if isinstance(found, work_pb2.ResourceBinding) else None  # the informer holds RBs
        wanted, awaiting = await self._dependents(independent)
        retry = False
        for binding_name, dependent in wanted.items():
            assert independent is not None  # no dependents are wanted without it
            retry |= await self._attach(independent, binding_name, dependent)
        label = dependencies.depended_by_label(namespace, name)[0]
        for attached in self.bindings.by_index(DEPENDED_BY_INDEX, label):
            if attached.metadata.name not in wanted:
                await self._detach(attached, namespace, name)
        if retry:
            return Result(requeue_after=1.0)
        return Result(requeue_after=DEPENDENT_RECHECK) if awaiting else None

    async def _dependents(self, independent: work_pb2.ResourceBinding | None) -> tuple[
            dict[str, meta_pb2.Unstructured], bool]:
        """binding name -> dependent template, for the dependents that exist; and whether a
        dependent a script names does not exist (yet)."""
        if (not self.enabled or independent is None or works.is_deleting(independent)
                or not independent.spec.propagate_deps):
            return {}, False
        rt = template_type(independent)
        resource = independent.spec.resource
        template = (await cached_read.read(self.store, self.templates.get(rt.resource), rt, resource.namespace,
                                           resource.name) if rt is not None else None)
        if template is None:
            return {}, False
        found = {}
        awaiting = False
        scripted = self.interpreter is not None and self.interpreter.has(GET_DEPENDENCIES, template.api_version,
                                                                          template.kind)
        deps = await self._scripted(template) if scripted else dependencies.dependencies(template)
        for dep in deps:
            dep_rt = registry.for_kind(dep.api_version, dep.kind)
            dependent = await cached_read.read(self.store, self.templates.get(dep_rt.resource), dep_rt,
                                               dep.namespace, dep.name)
            # A dependent created later brings this binding back here (the informers' dependency index).
            if dependent is not None:
                found[keys.binding_name(dep.name, dep.kind)] = dependent
            elif scripted:
                awaiting = True
        return found, awaiting

    async def _scripted(self, template: meta_pb2.Unstructured) -> list[dependencies.Dependency]:
        """The dependencies the kind's GetDependencies names; DependenciesNotInterpreted (after an
        event) without an answer."""
        assert self.interpreter is not None
        answer = await self.interpreter.get_dependencies(template_object(template))
        problem = answer.error
        if answer.ok:
            found = [dependencies.Dependency(*dep) for dep in answer.value]
            try:
                for dep in found:
                    if not registry.for_kind(dep.api_version, dep.kind).is_template:
                        raise registry.UnknownResourceError(f"{dep.kind} ({dep.api_version}) is no resource template")
            except registry.UnknownResourceError as e:  # UnsupportedKindError (a karmada.io kind) too
                problem = f"GetDependencies: {e}"
            else:
                return found
        error = f"ResourceInterpreterCustomization {answer.customization}: {problem}" \
            if answer.customization else problem
        key = keys.object_key(template.metadata.namespace, template.metadata.name)
        message = f"Failed to get dependencies of {template.kind} {key}: {error}"
        log.warning("event=get-dependencies-failed template=%s/%s error=%s", template.kind, key, error)
        if self.events is not None:
            await self.events.warning(template, "GetDependenciesFailed", message)
        raise DependenciesNotInterpreted(message)

    async def _attach(self, independent: work_pb2.ResourceBinding, binding_name: str,
                      dependent: meta_pb2.Unstructured) -> bool:
        """Create or update the dependent's attached binding; True when it must be tried again later."""
        namespace = independent.metadata.namespace
        meta = dependent.metadata
        existing = await cached_read.read(self.store, self.bindings, registry.RESOURCE_BINDING, namespace,
                                          binding_name)
        if existing is None:
            new = dependencies.attached_binding(independent, dependent, wellknown.RB_PERMANENT_ID_LABEL,
                                                str(uuid.uuid4()))
            try:
                await self.store.create(new)
            except AlreadyExists:
                return True
            log.info("event=attach-dependent binding=%s/%s dependent=%s/%s", namespace, independent.metadata.name,
                     dependent.kind, meta.name)
            return False
        if works.is_deleting(existing):
            return True  # the old one is on its way out; make the new one after
        if not binds(existing, dependent.kind, meta.namespace, meta.name):
            log.warning("event=skip-dependent binding=%s/%s reason=BindingNameTaken dependent=%s", namespace,
                        binding_name, meta.name)
            return False

        def change(binding: work_pb2.ResourceBinding) -> bool:
            attached = dependencies.attach(binding, independent, dependent)
            if not attached.metadata.labels.get(wellknown.RB_PERMANENT_ID_LABEL):
                attached.metadata.labels[wellknown.RB_PERMANENT_ID_LABEL] = str(uuid.uuid4())
            if attached == binding:
                return False
            binding.CopyFrom(attached)
            return True

        try:
            await self.store.mutate(registry.RESOURCE_BINDING, namespace, binding_name, change)
        except NotFound:
            return True
        return False

    async def _detach(self, attached: Binding, namespace: str, name: str) -> None:
        def change(binding: work_pb2.ResourceBinding) -> bool:
            detached = dependencies.detach(binding, namespace, name)
            if detached == binding:
                return False
            binding.CopyFrom(detached)
            return True

        try:
            result = await self.store.mutate(registry.RESOURCE_BINDING, namespace, attached.metadata.name, change)
        except NotFound:
            return
        log.info("event=detach-dependent binding=%s/%s dependent=%s", namespace, name, attached.metadata.name)
        if (not result.spec.required_by and not result.spec.clusters
                and policy_match.claim_of(result.metadata) is None and not works.is_deleting(result)):
            # Nothing needs it and no policy claims it: it would only hold an empty schedule.
            with contextlib.suppress(NotFound, Conflict):
                await self.store.delete(registry.RESOURCE_BINDING, namespace, result.metadata.name,
                                        resource_version=result.metadata.resource_version)
