"""The binding-status controller (docs/karmada-rules.md §10, end): Work statuses -> the binding's
aggregatedStatus and FullyApplied condition -> the resource template's status.

Keyed `Kind:namespace/name` like the binding controller. Only scheduled bindings (with
`status.lastScheduledTime`) are aggregated, as in Karmada. A pass writes the binding's status
and the template's status at most once each, computed on a fresh read of each (retried on a
fresh read again if someone wrote in between).

A kind with a ResourceInterpreterCustomization `statusAggregation` script gets the `status` of
`AggregateStatus(template, items)` (run in the interpreter pool before the write) instead of the
native rule; a script without an answer leaves the template's status as it is, with a Warning
event AggregateStatusFailed, never a made-up one.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from flotilla.aio.clock import Clock
from flotilla.api import bindings, codec, keys
from flotilla.api.bindings import Binding, parse_binding_key
from flotilla.api.conditions import condition_status
from flotilla.api.v1 import meta_pb2, work_pb2
from flotilla.interpreter.customized import AGGREGATE_STATUS, CustomizedInterpreter
from flotilla.rules.aggregated_status import FULLY_APPLIED, awaits_reschedule, expected_clusters, set_fully_applied
from flotilla.rules.binding_builder import template_content, template_object
from flotilla.runtime.controller import Result
from flotilla.store import NotFound, ObjectStore
from flotilla.store.events import EventRecorder
from flotilla.store.informer import Informer
from services.executor import aggregation, works
from services.executor.binding_controller import BINDING_ID_INDEX, template_type
from services.executor.cached_write import CachedStatusWriter

log = logging.getLogger(__name__)


def aggregate_into(binding: Binding, found: list[work_pb2.Work], now: datetime) -> bool:
    """Set the binding's aggregatedStatus and FullyApplied condition in place; whether anything changed."""
    shares = {t.name: t.replicas for t in binding.spec.clusters}
    expected = expected_clusters(binding.spec)
    # A Work of a cluster the binding no longer expects is one the binding controller is about
    # to delete: reporting it until it is marked deleting would flip FullyApplied off and back
    # on (two writes of the binding and of its template) each time a cluster leaves.
    wanted = [w for w in found if works.work_cluster(w) in expected]
    items = aggregation.status_items(wanted, binding.spec.resource, binding.status.aggregated_status, now, shares)
    changed = list(binding.status.aggregated_status) != items
    if changed:
        del binding.status.aggregated_status[:]
        binding.status.aggregated_status.extend(items)
    # Its observedGeneration says which binding generation aggregatedStatus was computed for:
    # the eviction service trusts the health in it only for the current one.
    return set_fully_applied(binding, expected, now) or changed


def aggregated(binding: Binding) -> bool:
    return (not works.is_deleting(binding) and binding.status.HasField("last_scheduled_time")
            and not awaits_reschedule(binding))


class BindingStatusReconciler:
    def __init__(self, store: ObjectStore, clock: Clock, bindings: dict[str, Informer[Binding]],
                 works_informer: Informer[work_pb2.Work],
                 templates: Mapping[str, Informer[meta_pb2.Unstructured]] | None = None,
                 interpreter: CustomizedInterpreter | None = None, events: EventRecorder | None = None) -> None:
        self.store = store
        # The customizations' statusAggregation scripts.
        self.interpreter = interpreter
        self.events = events
        self.clock = clock
        self.bindings = bindings
        self.works = works_informer
        # Template informers by etcd resource, as the executor starts them (see controllers.py).
        self.templates = templates if templates is not None else {}
        self.writer = CachedStatusWriter(store)

    async def reconcile(self, key: str) -> Result | None:
        rt, namespace, name = parse_binding_key(key)
        cached = self.bindings[rt.kind].get(keys.object_key(namespace, name))
        if cached is None or not aggregated(cached):
            return None
        binding_id = works.binding_id(cached)
        found = self.works.by_index(BINDING_ID_INDEX, binding_id) if binding_id else []
        now = self.clock.now()
        seen: list[Binding] = []

        def change(binding: Binding) -> bool:
            seen[:] = [binding]
            return aggregated(binding) and aggregate_into(binding, found, now)

        was = condition_status(cached.status.conditions, FULLY_APPLIED)
        try:
            await self.writer.mutate(rt, namespace, name, cached, change)
        except NotFound:
            return None
        if not seen or not aggregated(seen[0]):
            return None
        binding = seen[0]
        now_applied = condition_status(binding.status.conditions, FULLY_APPLIED)
        if now_applied != was:
            log.info("event=fully-applied binding=%s status=%s health=%s", key, now_applied,
                     ",".join(f"{i.cluster_name}:{i.health}" for i in binding.status.aggregated_status))
        await self._write_template(binding, list(binding.status.aggregated_status),
                                   aggregation.dispatched_generations(found), now)
        return None

    async def _write_template(self, binding: Binding, items: list[work_pb2.AggregatedStatusItem],
                              dispatched: dict[str, int], now: datetime) -> None:
        rt = template_type(binding)
        if rt is None:
            return

        resource = binding.spec.resource
        informer = self.templates.get(rt.resource)
        cached = informer.get(keys.object_key(resource.namespace, resource.name)) if informer is not None else None
        scripted: dict[str, Any] | None = None
        if self.interpreter is not None and self.interpreter.has(AGGREGATE_STATUS, resource.api_version,
                                                                 resource.kind):
            current = cached if cached is not None else await self.store.try_get(rt, resource.namespace,
                                                                                 resource.name)
            if current is None:
                return
            scripted = await self._aggregate(binding, current, items)
            if scripted is None:
                return

        def change(template: meta_pb2.Unstructured) -> bool:
            status = scripted if scripted is not None else aggregation.template_status(
                template, items, dispatched, now, [c.name for c in binding.spec.clusters])
            content = template_content(template)
            if status is None or status == (content.get("status") or {}):
                return False
            content["status"] = status
            template.content = codec.raw_json(content)
            return True

        try:
            await self.writer.mutate(rt, resource.namespace, resource.name, cached, change)
        except NotFound:
            return

    async def _aggregate(self, binding: Binding, template: meta_pb2.Unstructured,
                         items: list[work_pb2.AggregatedStatusItem]) -> dict[str, Any] | None:
        """The template's status by the kind's AggregateStatus script; None (after an event) without one."""
        assert self.interpreter is not None
        answer = await self.interpreter.aggregate_status(template_object(template), [karmada_item(i) for i in items])
        if answer.ok:
            status = answer.value.get("status")
            if isinstance(status, dict):
                return status
            if status is None or status == []:
                return {}  # an empty Lua table, or no status at all
            error = f"AggregateStatus returned a status that is a {type(status).__name__}, not an object"
        else:
            error = answer.error
        if answer.customization:
            error = f"ResourceInterpreterCustomization {answer.customization}: {error}"
        log.warning("event=aggregate-status-failed binding=%s error=%s", bindings.key_of(binding), error)
        if self.events is not None:
            await self.events.warning(template, "AggregateStatusFailed",
                                      f"Failed to aggregate status of {template.kind} "
                                      f"{keys.object_key(template.metadata.namespace, template.metadata.name)}: "
                                      f"{error}")
        return None


def karmada_item(item: work_pb2.AggregatedStatusItem) -> dict[str, Any]:
    """An aggregated item as Karmada's AggregatedStatusItem JSON, the fields its scripts read."""
    result: dict[str, Any] = {"clusterName": item.cluster_name, "applied": item.applied}
    if item.status:
        result["status"] = codec.load_json(item.status)
    if item.applied_message:
        result["appliedMessage"] = item.applied_message
    if item.health:
        result["health"] = item.health
    return result
