"""Karmada's dependencies distributor (propagateDeps), keyed by workload binding,
`ResourceBinding:<namespace>/<name>`: keeps the attached bindings of the workload's dependents
(see `dependencies`) in step with the workload's clusters."""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Mapping

from flotilla.aio.clock import Clock
from flotilla.api import keys, registry, wellknown
from flotilla.api.bindings import Binding, parse_binding_key
from flotilla.api.v1 import meta_pb2, work_pb2
from flotilla.runtime.controller import Result
from flotilla.store import AlreadyExists, Conflict, NotFound, ObjectStore
from flotilla.store.informer import Informer
from services.executor import cached_read, dependencies, policy_match, works
from services.executor.binding_controller import template_type
from services.executor.detector import binds

log = logging.getLogger(__name__)

# Informer index of ResourceBindings: the attached bindings by the workload they depend on.
DEPENDED_BY_INDEX = "depended-by"


class DependencyReconciler:
    """Karmada's dependencies distributor, for ResourceBindings (dependents are namespaced)."""

    def __init__(self, store: ObjectStore, clock: Clock, bindings: Informer[Binding], enabled: bool = True,
                 templates: Mapping[str, Informer[meta_pb2.Unstructured]] | None = None) -> None:
        self.store = store
        self.clock = clock
        self.bindings = bindings
        self.enabled = enabled
        self.templates = templates if templates is not None else {}

    async def reconcile(self, key: str) -> Result | None:
        rt, namespace, name = parse_binding_key(key)
        if rt is not registry.RESOURCE_BINDING:
            return None
        found = await cached_read.read(self.store, self.bindings, registry.RESOURCE_BINDING, namespace, name)
        independent = found if isinstance(found, work_pb2.ResourceBinding) else None  # the informer holds RBs
        wanted = await self._dependents(independent)
        retry = False
        for binding_name, dependent in wanted.items():
            assert independent is not None  # no dependents are wanted without it
            retry |= await self._attach(independent, binding_name, dependent)
        label = dependencies.depended_by_label(namespace, name)[0]
        for attached in self.bindings.by_index(DEPENDED_BY_INDEX, label):
            if attached.metadata.name not in wanted:
                await self._detach(attached, namespace, name)
        return Result(requeue_after=1.0) if retry else None

    async def _dependents(self, independent: work_pb2.ResourceBinding | None) -> dict[str, meta_pb2.Unstructured]:
        """binding name -> dependent template, for the dependents that exist."""
        if (not self.enabled or independent is None or works.is_deleting(independent)
                or not independent.spec.propagate_deps):
            return {}
        rt = template_type(independent)
        resource = independent.spec.resource
        template = (await cached_read.read(self.store, self.templates.get(rt.resource), rt, resource.namespace,
                                           resource.name) if rt is not None else None)
        if template is None:
            return {}
        found = {}
        for dep in dependencies.dependencies(template):
            dep_rt = registry.for_kind(dep.api_version, dep.kind)
            dependent = await cached_read.read(self.store, self.templates.get(dep_rt.resource), dep_rt,
                                               dep.namespace, dep.name)
            # A dependent created later brings this binding back here (the informers' dependency index).
            if dependent is not None:
                found[keys.binding_name(dep.name, dep.kind)] = dependent
        return found

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
