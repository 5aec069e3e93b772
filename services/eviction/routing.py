"""Which eviction keys a binding event affects: pure functions of the event."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from flotilla.api.bindings import Binding, binding_key
from flotilla.api.conditions import get_condition, is_true
from flotilla.api.keys import object_key
from flotilla.api.v1 import cluster_pb2
from flotilla.runtime.manager import ToKeys, WatchEvent
from flotilla.store.informer import EventType, Informer
from services.eviction.graceful import EVICTION_BLOCKED


def binding(kind: str) -> ToKeys[Binding]:
    return lambda event: [binding_key(kind, object_key(event.obj.metadata.namespace, event.obj.metadata.name))]


def has_eviction_work(event: WatchEvent[Binding]) -> bool:
    """A binding with tasks to age out, or a condition about them to clear."""
    obj = event.obj
    return event.type is not EventType.DELETED and (
        bool(obj.spec.graceful_eviction_tasks) or get_condition(obj.status.conditions, EVICTION_BLOCKED) is not None)


# -- application failover ----------------------------------------------------

TARGET_CLUSTER_INDEX = "application-failover-cluster"


def application_failover_clusters(obj: Binding) -> list[str]:
    """Index: the clusters a binding with application failover is placed on."""
    if not (obj.spec.HasField("failover") and obj.spec.failover.HasField("application")):
        return []
    return [t.name for t in obj.spec.clusters]


def has_application_failover_work(event: WatchEvent[Binding]) -> bool:
    """A binding with application failover, or leftovers of it (timers, eviction history) to clear."""
    obj = event.obj
    return event.type is not EventType.DELETED and (
        (obj.spec.HasField("failover") and obj.spec.failover.HasField("application"))
        or bool(obj.spec.active_eviction_history) or bool(obj.status.application_unhealthy_since))


def ready_changed(event: WatchEvent[cluster_pb2.Cluster]) -> bool:
    """A cluster's readiness pauses or resumes application-failover timers."""
    if event.old is None or event.type is EventType.DELETED:
        return True
    return is_true(event.old.status.conditions, "Ready") != is_true(event.obj.status.conditions, "Ready")


def application_failover_bindings(bindings: Mapping[str, Informer[Binding]]) -> ToKeys[cluster_pb2.Cluster]:
    """The keys of every binding with application failover placed on the event's cluster."""

    def to_keys(event: WatchEvent[cluster_pb2.Cluster]) -> Iterable[str]:
        name = event.obj.metadata.name
        return [binding_key(kind, object_key(b.metadata.namespace, b.metadata.name))
                for kind, informer in bindings.items() for b in informer.by_index(TARGET_CLUSTER_INDEX, name)]

    return to_keys
