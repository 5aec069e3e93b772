"""Which taint-manager keys an informer event affects: pure functions of the event and, where
a cluster fans out to its bindings, of the informer caches."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from google.protobuf.message import Message

from flotilla.api.bindings import Binding, binding_key, key_of, keys_by_index
from flotilla.api.clusters import cluster_ready
from flotilla.api.events import EventType, WatchEvent
from flotilla.api.keys import object_key
from flotilla.api.v1 import cluster_pb2, policy_pb2
from flotilla.runtime.manager import ToKeys
from flotilla.store.informer import Informer
from services.taint_manager.admissions import ADMITTED, HELD, AdmissionRecords, Stored, Taint, taints_in_force
from services.taint_manager.evictor import EvictorState, user_taint_signature
from services.taint_manager.protection import region_of
from services.taint_manager.tolerations import needs_no_evicting

CLUSTER_INDEX = "cluster"

M = TypeVar("M", bound=Message)


def _protection_inputs(cluster: cluster_pb2.Cluster) -> tuple[str, bool, bool]:
    return region_of(cluster), cluster_ready(cluster), needs_no_evicting(cluster)


def protection_inputs_changed(event: WatchEvent[cluster_pb2.Cluster]) -> bool:
    """What eviction protection reads of a cluster (its region and health; whether it still has
    evictions to hold) changed, or the cluster came or went."""
    return (event.type is not EventType.MODIFIED or event.old is None
            or _protection_inputs(event.old) != _protection_inputs(event.obj))


def admission_inputs_changed(event: WatchEvent[cluster_pb2.Cluster]) -> bool:
    """What the leader's admission reads of a cluster changed (its readiness, the NoExecute taints
    in force), or the cluster came or went."""
    old = event.old
    if event.type is not EventType.MODIFIED or old is None:
        return True
    return (cluster_ready(old), taints_in_force(old)) != (cluster_ready(event.obj), taints_in_force(event.obj))


def answers(stored: Stored | None) -> bool:
    """The leader answered a request for admission, or took a record away: the bindings on the
    cluster look again (one still due asks again)."""
    return stored is None or stored.record is None or stored.record.state in (ADMITTED, HELD)


def index_by_cluster(binding: Binding) -> list[str]:
    return [t.name for t in binding.spec.clusters]


def not_deleted(event: WatchEvent[M]) -> bool:
    return event.type is not EventType.DELETED


def binding_inputs_changed(state: EvictorState) -> Callable[[WatchEvent[Binding]], bool]:
    """What an eviction decides from changed: the binding came, a cluster was added to its
    targets, or its tolerations changed. Not a status write (the scheduler's, the executor's), two
    or three per binding in a failover; not a change that only drops an eviction task, nor one
    that only takes clusters away (this evictor's own eviction among them), unless the binding
    has an eviction pending or held back here, which may have gone with the cluster (and with a
    deleted binding)."""

    def changed(event: WatchEvent[Binding]) -> bool:
        old, new = event.old, event.obj
        if event.type is EventType.ADDED or (event.type is EventType.MODIFIED and old is None):
            return True
        if event.type is EventType.MODIFIED and old is not None:
            if old.metadata.generation == new.metadata.generation:
                return False
            if old.spec.placement.cluster_tolerations != new.spec.placement.cluster_tolerations:
                return True
            before, after = {t.name for t in old.spec.clusters}, {t.name for t in new.spec.clusters}
            if after - before:
                return True
            if after == before:
                return False
        key = key_of(new)
        return key in state.pending or key in state.held

    return changed


def _eviction_inputs(cluster: cluster_pb2.Cluster) -> tuple[frozenset[Taint], str]:
    return taints_in_force(cluster), user_taint_signature(cluster)


def eviction_inputs_changed(event: WatchEvent[cluster_pb2.Cluster]) -> bool:
    """What an eviction decision reads of a cluster changed: the NoExecute taints in force (those
    of a Ready cluster less its stale readiness taints) and the user taint whose trace an eviction
    joins, or the cluster came or went. Not a new resource summary, which the status service
    writes every collection while pods move; and not a cluster leaving Ready before its NoExecute
    taint is on: the thousand passes that would find nothing to evict would stand in the queue in
    front of the evictions the taint brings a moment later."""
    old = event.old
    if event.type is not EventType.MODIFIED or old is None:
        return True
    return _eviction_inputs(old) != _eviction_inputs(event.obj)


def cluster_name(event: WatchEvent[cluster_pb2.Cluster]) -> list[str]:
    return [event.obj.metadata.name]


def bindings_on_cluster(bindings: Mapping[str, Informer[Binding]]) -> ToKeys[cluster_pb2.Cluster]:
    """The evictor's keys of every binding placed on the event's cluster."""

    def to_keys(event: WatchEvent[cluster_pb2.Cluster]) -> Iterable[str]:
        return keys_by_index(bindings, CLUSTER_INDEX, event.obj.metadata.name)

    return to_keys


def every_cluster(clusters: Informer[cluster_pb2.Cluster]) -> ToKeys[policy_pb2.ClusterTaintPolicy]:
    """A taint policy may match any cluster."""
    return lambda _: [c.metadata.name for c in clusters.list()]


def binding(kind: str) -> ToKeys[Binding]:
    return lambda event: [binding_key(kind, object_key(event.obj.metadata.namespace, event.obj.metadata.name))]


def clusters_with_records(admissions: AdmissionRecords) -> ToKeys[cluster_pb2.Cluster]:
    """Protection's state changed: each cluster with an admission record may be decided otherwise."""
    return lambda _: admissions.clusters()


def held_evictions(state: EvictorState) -> ToKeys[cluster_pb2.Cluster]:
    return lambda _: list(state.held)
