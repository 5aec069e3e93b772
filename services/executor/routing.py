"""Which executor keys an informer event affects, for the detector, the dependencies
distributor, the policy finalizer, the binding and binding-status controllers and the
execution controller (all wired in controllers.py).

Pure functions of the event and of informer caches passed in, so that the routing is
table-tested without etcd. Starting template informers on demand is a side effect and lives
in controllers.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from google.protobuf.message import Message

from flotilla.api import keys, registry
from flotilla.api.bindings import Binding, binding_key
from flotilla.api.clusters import cluster_ready
from flotilla.api.conditions import get_condition
from flotilla.api.events import EventType, WatchEvent
from flotilla.api.keys import execution_namespace
from flotilla.api.registry import ResourceType
from flotilla.api.v1 import cluster_pb2, meta_pb2, policy_pb2, work_pb2
from flotilla.api.wellknown import CPP_FINALIZER, PP_FINALIZER
from flotilla.rules.aggregated_status import awaits_reschedule
from flotilla.rules.binding_builder import template_content
from flotilla.rules.overrides import OverridePolicy, implicit_priority
from flotilla.rules.resource_selection import Match
from flotilla.runtime.manager import ToKeys
from flotilla.runtime.own_writes import OwnWrites
from flotilla.store.base import meta_of, object_key_of
from flotilla.store.informer import Informer
from services.executor import dependencies, works
from services.executor.binding_controller import binding_ref_of_work
from services.executor.detector import (
    CLAIM_INDEX,
    DEPENDENCIES_INDEX,
    policy_key,
    template_key,
    template_key_of,
    template_key_of_binding,
)
from services.executor.execution import APPLIED
from services.executor.policy_match import Policy

RB, CRB = registry.RESOURCE_BINDING.kind, registry.CLUSTER_RESOURCE_BINDING.kind
# The execution controller finds a cluster's Works by their namespace.
WORK_NAMESPACE_INDEX = "namespace"

M = TypeVar("M", bound=Message)
# Each routing function of policies serves both kinds' informers.
P = TypeVar("P", bound=Policy)


def object_key(obj: Message) -> str:
    return object_key_of(obj)


def deleting(obj: Message | None) -> bool:
    return obj is not None and works.is_deleting(obj)


def _old(event: WatchEvent[M]) -> M:
    """The previous version of a MODIFIED event (an informer always gives one)."""
    assert event.old is not None, f"a {event.type} event without the previous version"
    return event.old


def came_or_went(event: WatchEvent[M]) -> bool:
    return event.type is not EventType.MODIFIED


def lifecycle(event: WatchEvent[M]) -> bool:
    """Added, deleted, or started being deleted."""
    return event.type is not EventType.MODIFIED or deleting(event.old) != deleting(event.obj)


def template_type(api_version: str, kind: str) -> ResourceType[meta_pb2.Unstructured] | None:
    """The resource type of a template kind; None for a built-in or unknown kind."""
    try:
        rt = registry.for_kind(api_version, kind)
    except registry.UnknownResourceError:
        return None
    return rt if rt.is_template else None


def _template_spec(template: meta_pb2.Unstructured) -> dict[str, Any]:
    content = template_content(template)
    content.pop("status", None)
    return content


def specification_changed(old: meta_pb2.Unstructured, new: meta_pb2.Unstructured) -> bool:
    """Karmada's SpecificationChanged: anything but status and server bookkeeping. The store
    raises a template's generation whenever its content other than status changes, so an
    unchanged generation spares parsing both (every status write the executor aggregates comes
    back here, once for each of the three controllers that watch templates)."""
    return (old.metadata.labels != new.metadata.labels or old.metadata.annotations != new.metadata.annotations
            or old.metadata.uid != new.metadata.uid or deleting(old) != deleting(new)
            or old.metadata.owner_references != new.metadata.owner_references
            or (old.metadata.generation != new.metadata.generation and _template_spec(old) != _template_spec(new)))


# -- policies -> detector, policy finalizer ------------------------------------------------------

def policy_changed(event: WatchEvent[P]) -> bool:
    if event.type is not EventType.MODIFIED:
        return True
    old, new = _old(event), event.obj
    return (old.spec != new.spec or old.metadata.labels != new.metadata.labels
            or deleting(old) != deleting(new))


def selected_kinds(event: WatchEvent[P]) -> list[tuple[str, str]]:
    """The (apiVersion, kind) pairs either version of the policy selects."""
    return [(s.api_version, s.kind) for version in (event.obj, event.old) if version is not None
            for s in version.spec.resource_selectors]


def selected_templates(templates: Mapping[str, Informer[meta_pb2.Unstructured]]) -> ToKeys[P]:
    """Detector keys of the templates either version of the policy may select (by kind, and
    by namespace for a PropagationPolicy)."""

    def to_keys(event: WatchEvent[P]) -> Iterable[str]:
        for version in (event.obj, event.old):
            if version is None:
                continue
            namespace = version.metadata.namespace if isinstance(version, policy_pb2.PropagationPolicy) else None
            for selector in version.spec.resource_selectors:
                rt = template_type(selector.api_version, selector.kind)
                informer = templates.get(rt.resource) if rt is not None else None
                for template in informer.list() if informer is not None else []:
                    if namespace is None or template.metadata.namespace == namespace:
                        yield template_key_of(template)

    return to_keys


def claimed_templates(bindings: Mapping[str, Informer[Binding]]) -> ToKeys[P]:
    """Detector keys of the templates the policy claimed, whatever its selectors say now."""
    return lambda event: [template_key_of_binding(b) for informer in bindings.values()
                          for b in informer.by_index(CLAIM_INDEX, policy_key(event.obj))]


def finalizing_policy(event: WatchEvent[P]) -> list[str]:
    policy = event.obj
    if event.type is not EventType.DELETED and deleting(policy) and (
            PP_FINALIZER in policy.metadata.finalizers or CPP_FINALIZER in policy.metadata.finalizers):
        return [policy_key(policy)]
    return []


# -- override policies -> binding controller -----------------------------------------------------

OP = TypeVar("OP", bound=OverridePolicy)


def override_policy_changed(event: WatchEvent[OP]) -> bool:
    """What the override manager reads of a policy: its spec, namespace and name (its name orders it)."""
    return event.type is not EventType.MODIFIED or _old(event).spec != event.obj.spec


def _selector_view(template: meta_pb2.Unstructured) -> dict[str, Any]:
    """What a resource selector reads of a template, without parsing its content."""
    meta = template.metadata
    return {"apiVersion": template.api_version, "kind": template.kind,
            "metadata": {"name": meta.name, "namespace": meta.namespace, "labels": dict(meta.labels)}}


def bindings_of_overridden(templates: Mapping[str, Informer[meta_pb2.Unstructured]]) -> ToKeys[OP]:
    """Binding-controller keys of the templates either version of an override policy selects
    (every template of its namespace, or every template, when it has no selectors): their Works
    are built anew with the policy as it is now, or without it once it is gone."""

    def to_keys(event: WatchEvent[OP]) -> Iterable[str]:
        found: set[str] = set()
        for version in (event.obj, event.old):
            if version is None:
                continue
            namespace = version.metadata.namespace if isinstance(version, policy_pb2.OverridePolicy) else None
            selectors = version.spec.resource_selectors
            if selectors:
                resources = {rt.resource for s in selectors if (rt := template_type(s.api_version, s.kind))}
                informers = [templates[r] for r in resources if r in templates]
            else:
                informers = list(templates.values())
            for informer in informers:
                for template in informer.list():
                    if namespace is not None and template.metadata.namespace != namespace:
                        continue
                    if implicit_priority(version, _selector_view(template)) is not Match.NONE:
                        found.add(_binding_of_template(template))
        return sorted(found)

    return to_keys


def _selectable(cluster: cluster_pb2.Cluster) -> tuple[Any, ...]:
    spec = cluster.spec
    return dict(cluster.metadata.labels), spec.provider, spec.region, spec.zone, list(spec.zones)


def cluster_selection_changed(event: WatchEvent[cluster_pb2.Cluster]) -> bool:
    """What a `targetCluster` reads of a Cluster (labels, provider, region, zones) changed."""
    return event.type is EventType.MODIFIED and _selectable(_old(event)) != _selectable(event.obj)


def bindings_in_cluster(works_informer: Informer[work_pb2.Work]) -> ToKeys[cluster_pb2.Cluster]:
    """Binding-controller keys of the bindings with a Work in the cluster: their override rules
    are matched against the cluster as it is now."""

    def to_keys(event: WatchEvent[cluster_pb2.Cluster]) -> Iterable[str]:
        namespace = execution_namespace(event.obj.metadata.name)
        return sorted({ref for w in works_informer.list()
                       if w.metadata.namespace == namespace and (ref := binding_ref_of_work(w)) is not None})

    return to_keys


# -- templates -> detector, binding controller, distributor --------------------------------------

def template_spec_changed(event: WatchEvent[meta_pb2.Unstructured]) -> bool:
    """A status write (ours, aggregating) changes nothing a binding holds."""
    return event.type is not EventType.MODIFIED or specification_changed(_old(event), event.obj)


def template(event: WatchEvent[meta_pb2.Unstructured]) -> list[str]:
    return [template_key_of(event.obj)]


def _binding_of_template(template: meta_pb2.Unstructured) -> str:
    namespace = template.metadata.namespace
    return binding_key(RB if namespace else CRB, keys.object_key(
        namespace, keys.binding_name(template.metadata.name, template.kind)))


def binding_of_template(event: WatchEvent[meta_pb2.Unstructured]) -> list[str]:
    # The binding records the template's version only along with a change of its own (see
    # detector.merge_binding): the Works follow the template directly.
    return [_binding_of_template(event.obj)]


def dependents_of_template(
    templates: Mapping[str, Informer[meta_pb2.Unstructured]],
) -> ToKeys[meta_pb2.Unstructured]:
    """Distributor keys: the template's own binding (its dependencies may have changed), and
    the bindings of workloads whose dependencies include the template."""

    def to_keys(event: WatchEvent[meta_pb2.Unstructured]) -> Iterable[str]:
        if event.obj.metadata.namespace:
            yield _binding_of_template(event.obj)
        key = template_key_of(event.obj)
        for informer in list(templates.values()):
            for referrer in informer.by_index(DEPENDENCIES_INDEX, key):
                name = keys.binding_name(referrer.metadata.name, referrer.kind)
                yield binding_key(RB, keys.object_key(referrer.metadata.namespace, name))

    return to_keys


def template_dependencies(template: meta_pb2.Unstructured) -> list[str]:
    """The DEPENDENCIES_INDEX of a template informer."""
    return [template_key(*dep) for dep in dependencies.dependencies(template)]


# -- bindings -> detector, binding controller, binding status, distributor ------------------------

def generation_changed(event: WatchEvent[M]) -> bool:
    return lifecycle(event) or meta_of(_old(event)).generation != meta_of(event.obj).generation


def binding(kind: str) -> ToKeys[Binding]:
    return lambda event: [binding_key(kind, object_key(event.obj))]


def binding_came_or_went(event: WatchEvent[Binding]) -> bool:
    """At start: its template may be gone. Once gone itself: its template may want a new one.
    Only for a template kind (a binding of anything else has no template to look at)."""
    resource = event.obj.spec.resource
    return came_or_went(event) and template_type(resource.api_version, resource.kind) is not None


def binding_came_or_went_elsewhere(created: OwnWrites) -> Callable[[WatchEvent[Binding]], bool]:
    """`binding_came_or_went`, less the detector's own creations coming back: it made each from
    the template as it then was, and a change of the template since brings it back by itself."""
    return lambda event: binding_came_or_went(event) and not created.echo(event)


def template_of_binding(event: WatchEvent[Binding]) -> list[str]:
    return [template_key_of_binding(event.obj)]


def binding_spec_changed(event: WatchEvent[Binding]) -> bool:
    return generation_changed(event) or _old(event).metadata.labels != event.obj.metadata.labels


def binding_scheduled(event: WatchEvent[Binding]) -> bool:
    """A change the binding-status controller aggregates on: a new generation, a new placement, or
    the scheduler's decision of this generation (an aggregation waits for it: awaits_reschedule)."""
    if generation_changed(event):
        return True
    old = _old(event)
    return (old.status.last_scheduled_time != event.obj.status.last_scheduled_time
            or awaits_reschedule(old) != awaits_reschedule(event.obj))


def propagates_deps(event: WatchEvent[Binding]) -> bool:
    return generation_changed(event) and (
        event.obj.spec.propagate_deps or (event.old is not None and event.old.spec.propagate_deps))


def workloads_depending_on(event: WatchEvent[Binding]) -> list[str]:
    """An attached binding that came or went is made again if its workloads still need it."""
    if not lifecycle(event):
        return []
    binding = event.obj
    result = []
    for label in dependencies.depended_by(binding):
        namespace, _, name = binding.metadata.labels[label].partition("_")
        result.append(binding_key(RB, keys.object_key(namespace, name)))
    return result


# -- works -> binding controller, binding status --------------------------------------------------

def binding_of_work(event: WatchEvent[work_pb2.Work]) -> list[str]:
    ref = binding_ref_of_work(event.obj)
    return [ref] if ref is not None else []


def work_spec_changed(event: WatchEvent[work_pb2.Work]) -> bool:
    return (lifecycle(event) or _old(event).spec != event.obj.spec
            or _old(event).metadata.labels != event.obj.metadata.labels)


def work_status_changed(event: WatchEvent[work_pb2.Work]) -> bool:
    """What the binding's aggregatedStatus reads of a Work changed. Not its creation, as in
    Karmada: a new Work has no status yet, and its binding's own change (the schedule that asked
    for it) has already been aggregated; reporting it as not applied was one more write of the
    binding and its template per new Work. The annotations say which template generation the
    member was given."""
    if event.type is EventType.ADDED:
        return False
    return (lifecycle(event) or _old(event).status != event.obj.status
            or _old(event).metadata.annotations != event.obj.metadata.annotations)


# -- the execution side ---------------------------------------------------------------------------

def _applied(work: work_pb2.Work) -> tuple[str, int] | None:
    condition = get_condition(work.status.conditions, APPLIED)
    return None if condition is None else (condition.status, condition.observed_generation)


def work_apply_state_changed(event: WatchEvent[work_pb2.Work]) -> bool:
    """What the execution and work-status controllers act on: the Work came or started going, its
    generation or finalizers changed, or its Applied condition did. Not the manifest statuses the
    work-status controller writes: each of those woke both controllers for nothing."""
    if event.type is EventType.DELETED:
        return False
    if lifecycle(event):
        return True
    return _generation_or_finalizers_changed(event) or _applied(_old(event)) != _applied(event.obj)


def _generation_or_finalizers_changed(event: WatchEvent[work_pb2.Work]) -> bool:
    old, new = _old(event), event.obj
    return (old.metadata.generation != new.metadata.generation
            or list(old.metadata.finalizers) != list(new.metadata.finalizers))


def work_apply_due(event: WatchEvent[work_pb2.Work]) -> bool:
    """What the execution controller acts on: a change of the Work's apply state
    (`work_apply_state_changed`) that leaves something to do. Not the Applied condition that
    says the Work's generation is applied: the execution controller writes that itself after each
    apply, and it woke the controller again for nothing."""
    if not work_apply_state_changed(event):
        return False
    new = event.obj
    if event.type is not EventType.MODIFIED or lifecycle(event) or _generation_or_finalizers_changed(event):
        return True
    return _applied(new) != ("True", new.metadata.generation)


def work(event: WatchEvent[work_pb2.Work]) -> list[str]:
    return [object_key(event.obj)]


def _readiness(cluster: cluster_pb2.Cluster) -> tuple[bool, bool]:
    return cluster_ready(cluster), cluster.metadata.HasField("deletion_timestamp")


def readiness_changed(event: WatchEvent[cluster_pb2.Cluster]) -> bool:
    """Works wait (with backoff) while their cluster is not Ready; becoming Ready, or starting
    to terminate, lets them through at once."""
    return event.type is EventType.DELETED or event.old is None or _readiness(event.obj) != _readiness(event.old)


def works_of_cluster(works_informer: Informer[work_pb2.Work]) -> ToKeys[cluster_pb2.Cluster]:
    return lambda event: sorted(works_informer.index_keys(WORK_NAMESPACE_INDEX,
                                                          execution_namespace(event.obj.metadata.name)))
