"""Which scheduler keys a Cluster or binding event affects: pure functions of the event (and of
the binding informer's cache)."""

from __future__ import annotations

from typing import TypeVar

from google.protobuf.message import Message

from flotilla.api.bindings import Binding
from flotilla.api.clusters import cluster_ready
from flotilla.api.conditions import FALSE, get_condition
from flotilla.api.events import EventType, WatchEvent
from flotilla.api.v1 import cluster_pb2
from flotilla.rules.scheduler_state import SCHEDULED
from flotilla.runtime.manager import ToKeys
from flotilla.scheduler.plugin_api import AffinityMatcher, ClusterInfo
from flotilla.store.base import object_key_of
from flotilla.store.informer import Informer

M = TypeVar("M", bound=Message)


def affected_by(binding: Binding, cluster: ClusterInfo) -> bool:
    """Whether a change to `cluster` may change the binding's placement (docs/karmada-rules.md §8.1): its affinity
    matches the cluster (or it has none), its clusterAffinities term is not settled yet, or it
    runs on the cluster."""
    if any(t.name == cluster.name for t in binding.spec.clusters):
        return True
    placement = binding.spec.placement
    if placement.HasField("cluster_affinity"):
        return AffinityMatcher.of(placement.cluster_affinity).matches(cluster)
    if placement.cluster_affinities:
        if binding.status.scheduler_observed_generation != binding.metadata.generation:
            return True
        observed = binding.status.scheduler_observing_affinity_name
        term = next((t for t in placement.cluster_affinities if t.affinity_name == observed), None)
        return term is None or AffinityMatcher.of(term).matches(cluster)
    return True


def cluster_change_matters(event: WatchEvent[cluster_pb2.Cluster]) -> bool:
    if event.type is EventType.DELETED:
        return False
    cluster, old = event.obj, event.old
    if old is None:
        return True
    return (
        cluster.metadata.HasField("deletion_timestamp") != old.metadata.HasField("deletion_timestamp")
        or dict(cluster.metadata.labels) != dict(old.metadata.labels)
        or (cluster.metadata.generation != old.metadata.generation and not only_taints_added(old, cluster))
    )


def _taint_ids(cluster: cluster_pb2.Cluster) -> set[tuple[str, str, str]]:
    return {(t.key, t.value, t.effect) for t in cluster.spec.taints}


def only_taints_added(old: cluster_pb2.Cluster, new: cluster_pb2.Cluster) -> bool:
    """Whether the spec change from `old` to `new` is taints added and nothing else. That changes
    no binding's placement, so no binding is looked at again (Karmada looks at every affected
    one, and for the same result): a new taint only keeps the cluster from bindings not on it,
    which were not placed there anyway, and TaintToleration passes the bindings already on it,
    whose eviction is the taint manager's. A failed cluster's not-ready taints would otherwise
    send every binding on it through the scheduler just as the taint manager evicts them, and the
    evicted ones, already decided once, would wait behind the rest of that queue to be rescheduled."""
    if not _taint_ids(old) < _taint_ids(new):
        return False
    before, after = cluster_pb2.ClusterSpec(), cluster_pb2.ClusterSpec()
    before.CopyFrom(old.spec)
    after.CopyFrom(new.spec)
    del before.taints[:], after.taints[:]
    return before == after


def cluster_status_matters(event: WatchEvent[cluster_pb2.Cluster]) -> bool:
    """A change of a cluster's readiness or served APIs, which `cluster_change_matters` does not
    see (it is status only) but which may let a binding that failed to schedule fit now."""
    cluster, old = event.obj, event.old
    if event.type is EventType.DELETED or old is None or cluster_change_matters(event):
        return False
    return (list(cluster.status.api_enablements) != list(old.status.api_enablements)
            or cluster_ready(cluster) != cluster_ready(old))


def bindings_not_scheduled(bindings: Informer[Binding]) -> ToKeys[cluster_pb2.Cluster]:
    """The bindings whose last schedule failed: tried again at once rather than at their next
    backoff step."""
    def to_keys(_: WatchEvent[cluster_pb2.Cluster]) -> list[str]:
        return [object_key_of(b) for b in bindings.list() if _not_scheduled(b)]

    return to_keys


def _not_scheduled(binding: Binding) -> bool:
    condition = get_condition(binding.status.conditions, SCHEDULED)
    return condition is not None and condition.status == FALSE


def bindings_affected_by_cluster(bindings: Informer[Binding]) -> ToKeys[cluster_pb2.Cluster]:
    # Asked twice for each cluster change (to force the bindings, then to enqueue them): one
    # pass over every binding answers both.
    last: list[tuple[cluster_pb2.Cluster, cluster_pb2.Cluster | None, list[str]]] = []

    def to_keys(event: WatchEvent[cluster_pb2.Cluster]) -> list[str]:
        if last and last[0][0] is event.obj and last[0][1] is event.old:
            return last[0][2]
        info = ClusterInfo.from_cluster(event.obj)
        found = [object_key_of(b) for b in bindings.list() if affected_by(b, info)]
        last[:] = [(event.obj, event.old, found)]
        return found

    return to_keys


def binding_keys(event: WatchEvent[Binding]) -> list[str]:
    return [object_key_of(event.obj)]



def placement_changed(event: WatchEvent[Binding]) -> bool:
    """A binding's targets changed (a decision written, or a cluster evicted from it)."""
    old = event.old
    return (event.type is EventType.MODIFIED and old is not None
            and list(old.spec.clusters) != list(event.obj.spec.clusters))


def deleted(event: WatchEvent[M]) -> bool:
    return event.type is EventType.DELETED
