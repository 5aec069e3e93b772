from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from flotilla.api.conditions import set_condition
from flotilla.api.events import EventType, WatchEvent
from flotilla.api.v1 import cluster_pb2, work_pb2
from services.taint_manager import routing
from services.taint_manager.evictor import EvictorState, Held, Pending
from services.taint_manager.tolerations import needs_no_evicting
from tests.unit.cache_fake import Cache

ADDED, MODIFIED, DELETED = EventType.ADDED, EventType.MODIFIED, EventType.DELETED


def cluster(name: str, ready: str = "True", no_execute: bool = False,
            taint_key: str = "cluster.karmada.io/not-ready", added: int = 0) -> cluster_pb2.Cluster:
    """`added`: the NoExecute taint's timeAdded, in seconds, if any."""
    c = cluster_pb2.Cluster()
    c.metadata.name = name
    set_condition(c.status.conditions, "Ready", ready, "", "", datetime(2024, 1, 1, tzinfo=UTC))
    if no_execute:
        taint = c.spec.taints.add(key=taint_key, effect="NoExecute")
        if added:
            taint.time_added.seconds = added
    return c


def rb(name: str, *clusters: str, namespace: str = "default") -> work_pb2.ResourceBinding:
    b = work_pb2.ResourceBinding()
    b.metadata.name, b.metadata.namespace = name, namespace
    for c in clusters:
        b.spec.clusters.add(name=c, replicas=1)
    return b


def crb(name: str, *clusters: str) -> work_pb2.ClusterResourceBinding:
    b = work_pb2.ClusterResourceBinding()
    b.metadata.name = name
    for c in clusters:
        b.spec.clusters.add(name=c, replicas=1)
    return b


BINDINGS: dict[str, Any] = {
    "ResourceBinding": Cache([rb("a", "m1"), rb("b", "m2"), rb("c", "m1", "m2", namespace="ns")],
                             cluster=routing.index_by_cluster),
    "ClusterResourceBinding": Cache([crb("x", "m1")], cluster=routing.index_by_cluster),
}


@pytest.mark.parametrize(("event", "keys"), [
    (WatchEvent(ADDED, cluster("m1")), ["ResourceBinding:default/a", "ResourceBinding:ns/c",
                                        "ClusterResourceBinding:x"]),
    (WatchEvent(MODIFIED, cluster("m2", "False"), cluster("m2")), ["ResourceBinding:default/b",
                                                                   "ResourceBinding:ns/c"]),
    (WatchEvent(DELETED, cluster("m3")), []),
])
def test_a_cluster_event_looks_at_the_bindings_on_it(event: WatchEvent[Any], keys: list[str]) -> None:
    assert list(routing.bindings_on_cluster(BINDINGS)(event)) == keys


@pytest.mark.parametrize(("event", "keys"), [
    (WatchEvent(ADDED, cluster("m1")), ["m1"]),
    (WatchEvent(MODIFIED, cluster("m1", "False"), cluster("m1")), ["m1"]),
])
def test_a_cluster_event_retaints_the_cluster(event: WatchEvent[Any], keys: list[str]) -> None:
    assert routing.not_deleted(event)
    assert routing.cluster_name(event) == keys


def test_a_deleted_cluster_is_not_retainted() -> None:
    assert not routing.not_deleted(WatchEvent(DELETED, cluster("m1")))


def test_a_taint_policy_event_retaints_every_cluster() -> None:
    clusters = Cache([cluster("m1"), cluster("m2")])
    assert list(routing.every_cluster(clusters)(WatchEvent(ADDED, object()))) == ["m1", "m2"]  # type: ignore[arg-type]


@pytest.mark.parametrize(("kind", "binding", "key"), [
    ("ResourceBinding", rb("a", "m1"), "ResourceBinding:default/a"),
    ("ClusterResourceBinding", crb("x"), "ClusterResourceBinding:x"),
])
def test_a_binding_event_is_its_own_key(kind: str, binding: Any, key: str) -> None:
    assert list(routing.binding(kind)(WatchEvent(ADDED, binding))) == [key]


def test_held_evictions_are_every_held_key() -> None:
    state = EvictorState()
    state.held["ResourceBinding:default/a"] = []
    state.held["ClusterResourceBinding:x"] = []
    assert sorted(routing.held_evictions(state)(WatchEvent(MODIFIED, cluster("m1"), cluster("m1")))) == [
        "ClusterResourceBinding:x", "ResourceBinding:default/a"]


@pytest.mark.parametrize(("c", "expected"), [
    (cluster("m1"), True),
    (cluster("m1", "False"), False),
    (cluster("m1", "False", no_execute=True), False),
    (cluster("m1", no_execute=True, taint_key="maintenance"), False),
    # Ready, its not-ready taint not removed yet: nothing to evict for.
    (cluster("m1", no_execute=True), True),
])
def test_needs_no_evicting(c: cluster_pb2.Cluster, expected: bool) -> None:
    assert needs_no_evicting(c) is expected


def collected(c: cluster_pb2.Cluster, pods: int) -> cluster_pb2.Cluster:
    """The cluster after a collection that only changed its resource summary."""
    after = cluster_pb2.Cluster()
    after.CopyFrom(c)
    after.status.resource_summary.allocated["pods"] = str(pods)
    return after


@pytest.mark.parametrize(("event", "looks"), [
    (WatchEvent(ADDED, cluster("m1")), True),
    (WatchEvent(DELETED, cluster("m1")), True),
    (WatchEvent(MODIFIED, cluster("m1", "False", no_execute=True), cluster("m1", "False")), True),
    (WatchEvent(MODIFIED, cluster("m1", "False"), cluster("m1", "False", no_execute=True)), True),
    # Ready lost or regained with no NoExecute taint: nothing to evict for either way (the
    # taint, when it comes, is its own change).
    (WatchEvent(MODIFIED, cluster("m1", "False"), cluster("m1")), False),
    (WatchEvent(MODIFIED, cluster("m1"), cluster("m1", "False")), False),
    # Ready regained before the not-ready taint is removed: the stale taint no longer counts.
    (WatchEvent(MODIFIED, cluster("m1", no_execute=True), cluster("m1", "False", no_execute=True)), True),
    # A user's NoExecute taint is in force either way, but only a Ready cluster's opens a trace.
    (WatchEvent(MODIFIED, cluster("m1", no_execute=True, taint_key="maintenance"),
                cluster("m1", "False", no_execute=True, taint_key="maintenance")), True),
    (WatchEvent(MODIFIED, cluster("m1", "False", no_execute=True, taint_key="maintenance"),
                cluster("m1", "False", no_execute=True, taint_key="maintenance", added=7)), True),
    # A collection that changed only the resource summary: nothing an eviction reads.
    (WatchEvent(MODIFIED, collected(cluster("m1"), 7), cluster("m1")), False),
    (WatchEvent(MODIFIED, collected(cluster("m1", "False", no_execute=True), 7),
                cluster("m1", "False", no_execute=True)), False),
])
def test_the_bindings_on_a_cluster_are_looked_at_when_its_taints_or_readiness_change(
        event: WatchEvent[Any], looks: bool) -> None:
    assert routing.eviction_inputs_changed(event) is looks


def in_region(c: cluster_pb2.Cluster, region: str) -> cluster_pb2.Cluster:
    c.spec.region = region
    return c


@pytest.mark.parametrize(("event", "observed"), [
    (WatchEvent(ADDED, cluster("m1")), True),
    (WatchEvent(DELETED, cluster("m1")), True),
    (WatchEvent(MODIFIED, cluster("m1", "False"), cluster("m1")), True),
    (WatchEvent(MODIFIED, cluster("m1"), cluster("m1", "False")), True),
    (WatchEvent(MODIFIED, cluster("m1", no_execute=True), cluster("m1", "False", no_execute=True)), True),
    # A NoExecute taint other than readiness's removed from a Ready cluster: its held evictions go.
    (WatchEvent(MODIFIED, cluster("m1"), cluster("m1", no_execute=True, taint_key="maintenance")), True),
    (WatchEvent(MODIFIED, in_region(cluster("m1"), "eu"), cluster("m1")), True),
    (WatchEvent(MODIFIED, collected(cluster("m1"), 7), cluster("m1")), False),
    (WatchEvent(MODIFIED, collected(cluster("m1", "False", no_execute=True), 7),
                cluster("m1", "False", no_execute=True)), False),
])
def test_eviction_protection_looks_again_when_a_clusters_region_or_health_changes(
        event: WatchEvent[Any], observed: bool) -> None:
    assert routing.protection_inputs_changed(event) is observed


def generation(b: work_pb2.ResourceBinding, value: int) -> work_pb2.ResourceBinding:
    b.metadata.generation = value
    return b


def tolerating(b: work_pb2.ResourceBinding) -> work_pb2.ResourceBinding:
    b.spec.placement.cluster_tolerations.add(key="dedicated", operator="Exists", effect="NoExecute")
    return b


def task_for(b: work_pb2.ResourceBinding, cluster: str) -> work_pb2.ResourceBinding:
    b.spec.graceful_eviction_tasks.add(from_cluster=cluster)
    return b


WEB = "ResourceBinding:default/web"


@pytest.mark.parametrize(("event", "state", "looked_at"), [
    (WatchEvent(ADDED, rb("web", "m1")), None, True),
    (WatchEvent(DELETED, rb("web", "m1")), None, False),
    # Deleted with an eviction held back here: the hold goes.
    (WatchEvent(DELETED, rb("web", "m1")), "held", True),
    # Scheduled onto another cluster: it may have to leave it too.
    (WatchEvent(MODIFIED, generation(rb("web", "m1", "m2"), 2), generation(rb("web", "m1"), 1)), None, True),
    (WatchEvent(MODIFIED, generation(rb("web", "m2"), 2), generation(rb("web", "m1"), 1)), None, True),
    (WatchEvent(MODIFIED, generation(tolerating(rb("web", "m1")), 2), generation(rb("web", "m1"), 1)), None, True),
    # Evicted from m1 (this evictor's own write), or its task dropped: nothing more to decide...
    (WatchEvent(MODIFIED, generation(task_for(rb("web", "m2"), "m1"), 2), generation(rb("web", "m1", "m2"), 1)),
     None, False),
    (WatchEvent(MODIFIED, generation(rb("web", "m2"), 3), generation(task_for(rb("web", "m2"), "m1"), 2)),
     None, False),
    # ... unless an eviction is pending or held here, which may have gone with the cluster.
    (WatchEvent(MODIFIED, generation(rb("web", "m2"), 2), generation(rb("web", "m1", "m2"), 1)), "pending", True),
    (WatchEvent(MODIFIED, generation(rb("web", "m2"), 2), generation(rb("web", "m1", "m2"), 1)), "held", True),
    # A status write (the scheduler's observation, the executor's aggregated status): same spec.
    (WatchEvent(MODIFIED, generation(rb("web", "m1"), 1), generation(rb("web", "m1"), 1)), "held", False),
])
def test_a_binding_is_looked_at_when_what_its_eviction_reads_changes(
        event: WatchEvent[Any], state: str | None, looked_at: bool) -> None:
    evictor = EvictorState()
    if state == "pending":
        evictor.pending[WEB] = [Pending(WEB, "m1", datetime(2026, 1, 1, tzinfo=UTC))]
    elif state == "held":
        evictor.hold(Held(WEB, "m1", "held for a test"))
    assert routing.binding_inputs_changed(evictor)(event) is looked_at
    evictor.release_all()
