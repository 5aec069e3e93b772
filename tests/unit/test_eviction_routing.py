"""The eviction service's routing: which binding and cluster events bring work to its controllers,
and the indices they look keys up by. Pure functions of the event, table-tested."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from flotilla.api.conditions import set_condition
from flotilla.api.events import EventType, WatchEvent
from flotilla.api.v1 import cluster_pb2, work_pb2
from services.eviction import routing

ADDED, MODIFIED, DELETED = EventType.ADDED, EventType.MODIFIED, EventType.DELETED
T0 = datetime(2026, 6, 1, tzinfo=UTC)


def rb(*clusters: str, tasks: tuple[str, ...] = (), failback: bool = False, application: bool = False,
       blocked: bool = False) -> work_pb2.ResourceBinding:
    b = work_pb2.ResourceBinding()
    b.metadata.name, b.metadata.namespace = "web-deployment", "default"
    for name in clusters:
        b.spec.clusters.add(name=name, replicas=1)
    for name in tasks:
        b.spec.graceful_eviction_tasks.add(from_cluster=name, producer="TaintManager")
    if failback:
        b.spec.failover.cluster.failback.enabled = True
    if application:
        b.spec.failover.application.purge_mode = "Gracefully"
    if blocked:
        set_condition(b.status.conditions, "EvictionBlocked", "True", "NoPlacement", "", T0)
    return b


def with_record(b: work_pb2.ResourceBinding, recovered: bool = True, failed_back: bool = False,
                home: str = "member1") -> work_pb2.ResourceBinding:
    record = b.status.failover_history.add(from_cluster=home, to_clusters=["member2"])
    record.clusters_before.add(name=home, replicas=1)
    if recovered:
        record.recovered_time.FromDatetime(T0)
    if failed_back:
        record.failed_back_time.FromDatetime(T0)
    return b


def event(obj: work_pb2.ResourceBinding, type_: EventType = MODIFIED,
          old: work_pb2.ResourceBinding | None = None) -> WatchEvent[work_pb2.ResourceBinding]:
    return WatchEvent(type_, obj, old)


def cluster(ready: str | None, moved: int = 0) -> cluster_pb2.Cluster:
    c = cluster_pb2.Cluster()
    c.metadata.name = "member1"
    if ready is not None:
        set_condition(c.status.conditions, "Ready", ready, "", "", T0)
        c.status.conditions[0].last_transition_time.seconds += moved
    return c


@pytest.mark.parametrize(("obj", "type_", "expected"), [
    (rb("member2"), MODIFIED, False),
    (rb("member2", tasks=("member1",)), MODIFIED, True),
    (rb("member2", blocked=True), MODIFIED, True),  # the condition about tasks to clear
    (rb(tasks=("member1",)), DELETED, False),
])
def test_eviction_work(obj: work_pb2.ResourceBinding, type_: EventType, expected: bool) -> None:
    assert routing.has_eviction_work(event(obj, type_)) is expected


@pytest.mark.parametrize(("obj", "expected"), [
    (rb("member2"), False),
    (rb("member2", tasks=("member1",)), True),
    (with_record(rb("member2")), False),  # complete
    (with_record(rb("member2"), recovered=False), True),
    (with_record(rb("member2", failback=True)), True),  # not yet failed back
    (with_record(rb("member1", failback=True), failed_back=True), False),
])
def test_history_work(obj: work_pb2.ResourceBinding, expected: bool) -> None:
    assert routing.has_history_work(event(obj)) is expected
    assert routing.has_history_work(event(obj, DELETED)) is False


@pytest.mark.parametrize(("obj", "expected"), [
    (with_record(rb("member2")), []),  # failback not enabled
    (rb("member2", failback=True), []),  # nothing to return to
    (with_record(rb("member2", failback=True)), ["*", "member1"]),
    (with_record(rb("member1", failback=True), failed_back=True), []),
])
def test_failback_index(obj: work_pb2.ResourceBinding, expected: list[str]) -> None:
    assert routing.index_failback(obj) == expected


def test_failback_slot_freed_when_the_failback_task_goes() -> None:
    failing = rb("member1")
    failing.spec.graceful_eviction_tasks.add(from_cluster="member2", producer="Failback")
    done = rb("member1")
    assert routing.failback_slot_freed(event(done, MODIFIED, failing))
    assert routing.failback_slot_freed(event(failing, DELETED))
    assert not routing.failback_slot_freed(event(failing, MODIFIED, done))
    assert not routing.failback_slot_freed(event(done, MODIFIED, rb("member1")))


@pytest.mark.parametrize(("before", "after", "expected"), [
    (cluster("True"), cluster("True"), False),
    (cluster("True"), cluster("False"), True),
    (cluster("True"), cluster("True", moved=5), True),  # failback counts from the transition
    (None, cluster("True"), True),
])
def test_ready_changed(before: cluster_pb2.Cluster | None, after: cluster_pb2.Cluster, expected: bool) -> None:
    type_ = ADDED if before is None else MODIFIED
    assert routing.ready_changed(WatchEvent(type_, after, before)) is expected


@pytest.mark.parametrize(("obj", "type_", "clusters", "work"), [
    (rb("member1", application=True), MODIFIED, ["member1"], True),
    (rb("member1"), MODIFIED, [], False),
    (rb("member1", application=True), DELETED, ["member1"], False),
])
def test_application_failover(obj: work_pb2.ResourceBinding, type_: EventType, clusters: list[str],
                              work: bool) -> None:
    assert routing.application_failover_clusters(obj) == clusters
    assert routing.has_application_failover_work(event(obj, type_)) is work


def test_leftovers_of_application_failover_are_work() -> None:
    leftover = rb("member2")
    leftover.spec.active_eviction_history.add(cluster_name="member1")
    assert routing.has_application_failover_work(event(leftover))
