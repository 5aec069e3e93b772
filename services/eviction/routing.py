"""Which eviction keys a binding event affects: pure functions of the event."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from flotilla.api.bindings import Binding, binding_key, keys_by_index
from flotilla.api.conditions import get_condition
from flotilla.api.events import EventType, WatchEvent
from flotilla.api.keys import object_key
from flotilla.api.v1 import cluster_pb2
from flotilla.runtime.manager import ToKeys
from flotilla.store.informer import Informer
from services.eviction.failback import failing_back
from services.eviction.graceful import EVICTION_BLOCKED


def binding(kind: str) -> ToKeys[Binding]:
    return lambda event: [binding_key(kind, object_key(event.obj.metadata.namespace, event.obj.metadata.name))]


def has_eviction_work(event: WatchEvent[Binding]) -> bool:
    """A binding with tasks to age out, or a condition about them to clear."""
    obj = event.obj
    return event.type is not EventType.DELETED and (
        bool(obj.spec.graceful_eviction_tasks) or get_condition(obj.status.conditions, EVICTION_BLOCKED) is not None)


# -- failover history and failback -------------------------------------------------------

# Bindings with failback enabled and a failover not yet failed back, indexed by every cluster
# of the placements they could return to, and all of them under FAILBACK_ANY.
FAILBACK_INDEX = "failback-home"
FAILBACK_ANY = "*"


def has_history_work(event: WatchEvent[Binding]) -> bool:
    """A binding with a failover to record, or a record still to complete (or to mark failed back)."""
    obj = event.obj
    failback = obj.spec.failover.cluster.failback.enabled
    return event.type is not EventType.DELETED and (
        bool(obj.spec.graceful_eviction_tasks)
        or any(not r.to_clusters or not r.HasField("recovered_time") or (failback and not r.HasField(
            "failed_back_time")) for r in obj.status.failover_history))


def index_failback(obj: Binding) -> list[str]:
    if not obj.spec.failover.cluster.failback.enabled:
        return []
    homes = {t.name for r in obj.status.failover_history if not r.HasField("failed_back_time")
             for t in r.clusters_before}
    return [FAILBACK_ANY, *sorted(homes)] if homes else []


def failback_enabled(event: WatchEvent[Binding]) -> bool:
    return event.type is not EventType.DELETED and event.obj.spec.failover.cluster.failback.enabled


def failback_slot_freed(event: WatchEvent[Binding]) -> bool:
    """A binding stopped failing back (its Failback task went, or it went)."""
    old = event.old if event.type is not EventType.DELETED else event.obj
    if old is None or not failing_back(old.spec):
        return False
    return event.type is EventType.DELETED or not failing_back(event.obj.spec)


def failback_waiting(bindings: Mapping[str, Informer[Binding]]) -> ToKeys[Binding]:
    """Every binding that may be waiting for a failback slot."""
    return lambda _: keys_by_index(bindings, FAILBACK_INDEX, FAILBACK_ANY)


def ready_changed(event: WatchEvent[cluster_pb2.Cluster]) -> bool:
    """The Ready condition's status or transition time changed (or the cluster appeared or went)."""
    if event.old is None or event.type is EventType.DELETED:
        return True
    return _ready(event.obj) != _ready(event.old)


def _ready(cluster: cluster_pb2.Cluster) -> tuple[str, int] | None:
    # Not cluster_ready: failback counts from the lastTransitionTime, so a new one matters too.
    ready = get_condition(cluster.status.conditions, "Ready")
    return None if ready is None else (ready.status, ready.last_transition_time.ToNanoseconds())


def failback_homes(bindings: Mapping[str, Informer[Binding]]) -> ToKeys[cluster_pb2.Cluster]:
    """The bindings that could fail back to the event's cluster."""
    return lambda event: keys_by_index(bindings, FAILBACK_INDEX, event.obj.metadata.name)


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


def application_failover_bindings(bindings: Mapping[str, Informer[Binding]]) -> ToKeys[cluster_pb2.Cluster]:
    """The keys of every binding with application failover placed on the event's cluster."""

    def to_keys(event: WatchEvent[cluster_pb2.Cluster]) -> Iterable[str]:
        return keys_by_index(bindings, TARGET_CLUSTER_INDEX, event.obj.metadata.name)

    return to_keys
