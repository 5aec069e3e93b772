"""Template informers live while something needs them: a kind that no policy selects, no binding
refers to and no dependency propagation reads any more has its informer stopped, with its etcd
watch and its cache. Otherwise every kind ever named in a selector (a typo, a kind tried once)
would keep a watch and memory for the life of the process.

Stopping one is safe at any moment: a reconciler that finds no informer reads etcd instead
(cached_read), and a policy or binding naming the kind again starts a new informer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from flotilla.aio.clock import Clock
from flotilla.api.bindings import Binding
from flotilla.api.v1 import meta_pb2, policy_pb2
from flotilla.runtime.manager import Manager
from flotilla.store.informer import Informer
from services.executor import routing

log = logging.getLogger(__name__)

# Long enough that a kind unselected and selected again within it keeps its cache.
SWEEP_PERIOD = 60.0

Policy = policy_pb2.PropagationPolicy | policy_pb2.ClusterPropagationPolicy


# Bindings by the etcd resource of their template's kind: what the sweep needs of every binding,
# kept up to date as each one changes, so that a sweep decodes no binding (a compact informer would
# decode all of them at once: at 20,000 bindings, about a hundred MiB for a moment, every period).
TEMPLATE_RESOURCE_INDEX = "template-resource"


def template_resource(binding: Binding) -> list[str]:
    """The etcd resource of the binding's template kind ([] for a kind that is no template)."""
    rt = routing.template_type(binding.spec.resource.api_version, binding.spec.resource.kind)
    return [rt.resource] if rt is not None else []


def needed_resources(policies: Iterable[Policy], binding_resources: Iterable[str],
                     dependents: Iterable[tuple[str, str]]) -> set[str]:
    """The etcd resources of the template kinds something names: a policy's selector, a
    binding's resource (`template_resource`), or the dependency distributor's kinds."""
    kinds = [(s.api_version, s.kind) for p in policies for s in p.spec.resource_selectors]
    kinds += list(dependents)
    named = {rt.resource for api_version, kind in set(kinds) if (rt := routing.template_type(api_version, kind))}
    return named | set(binding_resources)


class TemplateInformerSweep:
    def __init__(self, manager: Manager, clock: Clock, templates: dict[str, Informer[meta_pb2.Unstructured]],
                 policies: Iterable[Informer[Any]], bindings: Mapping[str, Informer[Binding]],
                 dependents: Callable[[], Iterable[tuple[str, str]]], period: float = SWEEP_PERIOD) -> None:
        self.manager = manager
        self.clock = clock
        self.templates = templates
        self.policies = list(policies)
        self.bindings = bindings
        for informer in bindings.values():
            informer.add_indexer(TEMPLATE_RESOURCE_INDEX, template_resource)
        self.dependents = dependents
        self.period = period

    async def sweep(self) -> list[str]:
        """Stop the informers nothing needs; the resources stopped."""
        if not all(i.synced for i in [*self.policies, *self.bindings.values()]):
            return []  # what is needed is not known yet
        needed = needed_resources([p for i in self.policies for p in i.list()],
                                  [r for i in self.bindings.values() for r in i.index_values(TEMPLATE_RESOURCE_INDEX)],
                                  self.dependents())
        stopped = []
        for resource in sorted(set(self.templates) - needed):
            informer = self.templates.pop(resource)
            await self.manager.drop_informer(informer.rt)
            stopped.append(resource)
            log.info("event=template-informer-stopped resource=%s reason=NothingSelectsIt", resource)
        return stopped

    async def run(self) -> None:
        while True:
            await self.clock.sleep(self.period)
            await self.sweep()
