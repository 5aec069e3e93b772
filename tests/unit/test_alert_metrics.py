"""The metrics the alerts of deploy/prometheus need beyond Karmada's (docs/alerts.md): who leads,
who is NOT_SERVING, failovers that have not finished (overdue graceful eviction tasks, blocked
bindings) and the evictions mass-failure protection holds back now; each follows its fact and
drops to 0 in a process that no longer leads."""

from __future__ import annotations

from datetime import datetime, timedelta

from prometheus_client import REGISTRY

from flotilla.aio.clock import FakeClock, RealClock
from flotilla.api import registry
from flotilla.api.events import EventType, WatchEvent
from flotilla.api.v1 import work_pb2
from flotilla.runtime.health import ServiceHealth
from flotilla.store import MemoryStore
from flotilla.store.leader import LeaderElector
from services.eviction.unfinished import Unfinished
from services.taint_manager.evictor import EvictorState, Held
from tests.taint_support import running as taint_manager_running
from tests.unit.test_eviction_graceful import binding, create_scheduled, deployment, set_status, tasks_of
from tests.unit.test_eviction_graceful import running as eviction_running
from tests.unit.test_taint_manager_recovery_memory import BINDING, CLUSTERS, down_and_tainted, until, web
from tests.watching import Watch


def value(metric: str, **labels: str) -> float | None:
    return REGISTRY.get_sample_value(metric, labels)


async def test_the_leader_says_1_and_a_standby_0(store: MemoryStore) -> None:
    first = LeaderElector(store, "metrics-svc", "first", ttl=30)
    second = LeaderElector(store, "metrics-svc", "second", ttl=30)
    assert value("flotilla_leader_election_master_status", name="metrics-svc") == 0
    await first.campaign()
    assert value("flotilla_leader_election_master_status", name="metrics-svc") == 1
    # A standby's resignation (it never led) says nothing about the leader in the same process.
    await second.resign()
    assert value("flotilla_leader_election_master_status", name="metrics-svc") == 1
    await first.resign()
    assert value("flotilla_leader_election_master_status", name="metrics-svc") == 0


async def test_serving_follows_the_health_answer() -> None:
    health = ServiceHealth("metrics-health")
    await health.publish()
    assert value("flotilla_service_serving", service="metrics-health") == 1
    await health.set_reason("election", "cannot campaign for leadership: etcd unreachable")
    assert value("flotilla_service_serving", service="metrics-health") == 0
    await health.set_reason("election", None)
    assert value("flotilla_service_serving", service="metrics-health") == 1


def task(created: datetime | None = None, grace: int | None = None,
         suppress: bool | None = None) -> work_pb2.GracefulEvictionTask:
    t = work_pb2.GracefulEvictionTask(from_cluster="member1")
    if created is not None:
        t.creation_timestamp.FromDatetime(created)
    if grace is not None:
        t.grace_period_seconds = grace
    if suppress is not None:
        t.suppress_deletion = suppress
    return t


def with_tasks(*tasks: work_pb2.GracefulEvictionTask) -> work_pb2.ResourceBinding:
    rb = work_pb2.ResourceBinding(kind="ResourceBinding")
    rb.metadata.name, rb.metadata.namespace = "a", "default"
    rb.spec.graceful_eviction_tasks.extend(tasks)
    return rb


async def test_a_task_is_overdue_from_its_own_deadline_and_a_deletion_forgets_it() -> None:
    clock = FakeClock(start=RealClock().now().replace(microsecond=0))
    view = Unfinished(clock, timedelta(seconds=600))
    now = clock.now()
    view.observe("ResourceBinding", WatchEvent(EventType.ADDED, with_tasks(
        task(now - timedelta(seconds=600)),  # the global timeout: due now
        task(now - timedelta(seconds=59), grace=60),  # its own grace period: due in 1 s
        task(now - timedelta(days=1), suppress=True),  # waits for a person, by design
        task(),  # not stamped yet: new
    )))
    assert view.overdue() == 1
    await clock.advance(1)
    assert view.overdue() == 2
    view.observe("ResourceBinding", WatchEvent(EventType.DELETED, with_tasks()))
    assert view.overdue() == 0


async def test_a_blocked_failover_is_counted_while_this_process_leads_and_until_it_finishes(
        store: MemoryStore) -> None:
    clock = FakeClock(start=RealClock().now().replace(microsecond=0))
    await store.create(deployment())
    await create_scheduled(store, binding({}, ["member1"]))
    async with eviction_running(store, clock, timeout=timedelta(seconds=30)) as controllers:
        await Watch(controllers.bindings["ResourceBinding"]).until(
            lambda: value("flotilla_eviction_blocked_bindings") == 1)
        assert value("flotilla_eviction_tasks_overdue") == 0
        await clock.advance(30)
        assert value("flotilla_eviction_tasks_overdue") == 1
    # The term ended: a standby reports nothing, whatever the store holds.
    assert value("flotilla_eviction_blocked_bindings") == value("flotilla_eviction_tasks_overdue") == 0

    async with eviction_running(store, clock, timeout=timedelta(seconds=30)) as controllers:
        watch = Watch(controllers.bindings["ResourceBinding"])
        await watch.until(lambda: value("flotilla_eviction_blocked_bindings") == 1)
        assert value("flotilla_eviction_tasks_overdue") == 1

        def placed(obj: work_pb2.ResourceBinding) -> None:
            obj.spec.clusters.add(name="member2", replicas=3)

        await store.mutate(registry.RESOURCE_BINDING, "default", "nginx-deployment", placed)
        await set_status(store, {"member2": "Healthy"})
        await watch.until(lambda: tasks_of(controllers) == [] and value("flotilla_eviction_blocked_bindings") == 0)
        assert value("flotilla_eviction_tasks_overdue") == 0


def test_held_evictions_are_counted_as_held_and_released() -> None:
    state = EvictorState()
    before = value("flotilla_taint_manager_held_evictions") or 0
    state.hold(Held("ResourceBinding:default/a", "member1", "every cluster is unhealthy"))
    state.hold(Held("ResourceBinding:default/a", "member2", "every cluster is unhealthy"))
    state.hold(Held("ResourceBinding:default/b", "member1", "every cluster is unhealthy"))
    assert value("flotilla_taint_manager_held_evictions") == before + 3
    state.release("ResourceBinding:default/a")
    assert value("flotilla_taint_manager_held_evictions") == before + 1
    state.release("ResourceBinding:default/a")
    state.release_all()
    assert value("flotilla_taint_manager_held_evictions") == before and state.held == {}


async def test_the_taint_manager_exports_what_protection_holds_while_it_leads(store: MemoryStore) -> None:
    clock = FakeClock(start=RealClock().now().replace(microsecond=0))
    for name in CLUSTERS:
        await down_and_tainted(store, clock, name)
    await web(store)
    before = value("flotilla_taint_manager_held_evictions") or 0
    async with taint_manager_running(store, clock) as manager:
        await until(lambda: len(manager.state.held.get(BINDING, [])) == 2)
        assert value("flotilla_taint_manager_held_evictions") == before + 2
    assert value("flotilla_taint_manager_held_evictions") == before
