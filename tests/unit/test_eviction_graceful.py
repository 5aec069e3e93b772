"""The graceful eviction controller running on a MemoryStore and a fake clock: a task is stamped,
dropped exactly at its deadline (no polling), dropped once the new placement is Healthy, and
kept with a condition while the evicted replicas have nowhere to go."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from datetime import timedelta

from google.protobuf.message import Message
from prometheus_client import REGISTRY

from flotilla.aio.clock import FakeClock, RealClock
from flotilla.api import codec, registry
from flotilla.api.conditions import get_condition, set_condition
from flotilla.api.v1 import core_pb2, meta_pb2, work_pb2
from flotilla.api.wellknown import TRACEPARENT_ANNOTATION
from flotilla.runtime.tracecontext import FAILOVER_RTO_SECONDS, traceparent
from flotilla.store import MemoryStore
from flotilla.store.events import EventRecorder
from flotilla.store.informer import Informer
from services.eviction.controllers import EvictionControllers
from services.eviction.graceful import (
    EVICTION_BLOCKED,
    GracefulEvictionConfig,
    GracefulEvictionReconciler,
)
from tests.eviction_support import aggregated_for_this_generation, others_catch_up
from tests.factories import make_cluster
from tests.tracing_support import recording_tracer
from tests.unit.cache_fake import Cache
from tests.watching import Watch

KEY = "default/nginx-deployment"


def deployment() -> meta_pb2.Unstructured:
    template = codec.from_dict({"apiVersion": "apps/v1", "kind": "Deployment",
                                "metadata": {"name": "nginx", "namespace": "default"},
                                "spec": {"replicas": 3}})
    assert isinstance(template, meta_pb2.Unstructured)
    return template


def binding(clusters: dict[str, int], tasks: list[str], **task_fields: object) -> work_pb2.ResourceBinding:
    rb = codec.from_dict({
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
        "metadata": {"name": "nginx-deployment", "namespace": "default"},
        "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default",
                              "name": "nginx"},
                 "replicas": 3,
                 "clusters": [{"name": c, "replicas": r} for c, r in clusters.items()],
                 "gracefulEvictionTasks": [{"fromCluster": c, "purgeMode": "Gracefully", "reason": "TaintUntolerated",
                                            "producer": "TaintManager", **task_fields} for c in tasks]},
    })
    assert isinstance(rb, work_pb2.ResourceBinding)
    return rb


async def create_scheduled(store: MemoryStore, rb: work_pb2.ResourceBinding,
                           health: dict[str, str] | None = None) -> None:
    """As the scheduler and the executor leave it: scheduled, with the given cluster health."""
    created = await store.create(rb)
    await set_status(store, health or {}, generation=created.metadata.generation)


async def set_status(store: MemoryStore, health: dict[str, str], generation: int | None = None) -> None:
    def change(obj: work_pb2.ResourceBinding) -> None:
        obj.status.scheduler_observed_generation = generation or obj.metadata.generation
        aggregated_for_this_generation(obj)
        del obj.status.aggregated_status[:]
        for cluster, value in health.items():
            obj.status.aggregated_status.add(cluster_name=cluster, applied=True, health=value)

    await store.mutate(registry.RESOURCE_BINDING, "default", "nginx-deployment", change, status=True)


@contextlib.asynccontextmanager
async def running(store: MemoryStore, clock: FakeClock | RealClock,
                  timeout: timedelta = timedelta(minutes=10)) -> AsyncIterator[EvictionControllers]:
    controllers = EvictionControllers(store, clock, GracefulEvictionConfig(timeout),
                                      events=EventRecorder(store, "eviction"))
    scheduler = others_catch_up(store, controllers)
    task = asyncio.create_task(controllers.run())
    try:
        for informer in controllers.bindings.values():
            await informer.wait_synced()
        yield controllers
    finally:
        task.cancel()
        await asyncio.gather(task, *scheduler, return_exceptions=True)


def current(controllers: EvictionControllers) -> work_pb2.ResourceBinding:
    rb = controllers.bindings["ResourceBinding"].get(KEY)
    assert isinstance(rb, work_pb2.ResourceBinding)
    return rb


def tasks_of(controllers: EvictionControllers) -> list[str]:
    return [t.from_cluster for t in current(controllers).spec.graceful_eviction_tasks]


def stamped(controllers: EvictionControllers) -> Callable[[], bool]:
    return lambda: all(t.HasField("creation_timestamp") for t in current(controllers).spec.graceful_eviction_tasks)


async def events(store: MemoryStore, reason: str) -> list[core_pb2.Event]:
    return [e for e in (await store.list(core_pb2.Event, "default")).items if e.reason == reason]


def dropped_count(reason: str) -> float:
    return REGISTRY.get_sample_value("flotilla_eviction_tasks_dropped_total", {"reason": reason}) or 0


async def test_a_task_is_stamped_then_dropped_exactly_at_its_deadline(store: MemoryStore) -> None:
    clock = FakeClock(start=RealClock().now().replace(microsecond=0))
    template = await store.create(deployment())
    rb = binding({"member2": 3}, ["member1"])
    rb.spec.resource.uid = template.metadata.uid
    await create_scheduled(store, rb, {"member2": "Unknown"})
    before = dropped_count("GracePeriodExpired")
    async with running(store, clock, timeout=timedelta(seconds=300)) as controllers:
        watch = Watch(controllers.bindings["ResourceBinding"])
        await watch.until(stamped(controllers))
        await watch.until(lambda: current(controllers).status.scheduler_observed_generation
                          == current(controllers).metadata.generation)
        await clock.advance(0)
        revision = current(controllers).metadata.resource_version
        created = current(controllers).spec.graceful_eviction_tasks[0].creation_timestamp.ToDatetime()
        assert created == clock.now().replace(tzinfo=None)
        await clock.advance(299.999)
        # Nothing was written while it waited: it sleeps until the deadline, it does not poll.
        assert tasks_of(controllers) == ["member1"]
        assert current(controllers).metadata.resource_version == revision
        await clock.advance(0.001)
        await watch.until(lambda: tasks_of(controllers) == [])
    assert dropped_count("GracePeriodExpired") == before + 1
    for obj_kind in ("ResourceBinding", "Deployment"):
        assert [e.message for e in await events(store, "EvictWorkloadFromClusterSucceed")
                if e.involved_object.kind == obj_kind] == ["Evict from cluster member1 succeed."]
    # The template's Event names it as the binding refers to it, as Karmada's does.
    [on_template] = [e.involved_object for e in await events(store, "EvictWorkloadFromClusterSucceed")
                     if e.involved_object.kind == "Deployment"]
    assert (on_template.api_version, on_template.namespace, on_template.name, on_template.uid) == (
        "apps/v1", "default", "nginx", template.metadata.uid)


async def test_dropped_once_every_new_placement_is_healthy_and_a_restart_keeps_the_clock(
        store: MemoryStore) -> None:
    clock = FakeClock(start=RealClock().now().replace(microsecond=0))
    await store.create(deployment())
    await create_scheduled(store, binding({"member2": 2, "member3": 1}, ["member1"]),
                           {"member2": "Healthy", "member3": "Unknown"})
    async with running(store, clock) as controllers:
        await Watch(controllers.bindings["ResourceBinding"]).until(stamped(controllers))
    stamp = (await store.get(registry.RESOURCE_BINDING, "default", "nginx-deployment")
             ).spec.graceful_eviction_tasks[0].creation_timestamp
    await clock.advance(60)
    async with running(store, clock) as controllers:
        watch = Watch(controllers.bindings["ResourceBinding"])
        await watch.until(lambda: current(controllers).spec.graceful_eviction_tasks[0].creation_timestamp == stamp)
        await set_status(store, {"member2": "Healthy", "member3": "Healthy"})
        await watch.until(lambda: tasks_of(controllers) == [])


async def test_nowhere_to_go_keeps_the_only_copy_and_says_why(store: MemoryStore) -> None:
    clock = FakeClock(start=RealClock().now().replace(microsecond=0))
    await store.create(deployment())
    await create_scheduled(store, binding({}, ["member1"]))
    async with running(store, clock, timeout=timedelta(seconds=30)) as controllers:
        watch = Watch(controllers.bindings["ResourceBinding"])

        def blocked() -> bool:
            condition = get_condition(current(controllers).status.conditions, EVICTION_BLOCKED)
            return condition is not None and condition.status == "True" and condition.reason == "NoPlacement"

        await watch.until(blocked)
        await clock.advance(3600)
        assert tasks_of(controllers) == ["member1"]
        [warning] = await events(store, EVICTION_BLOCKED)
        assert warning.type == "Warning" and "member1" in warning.message

        # A placement appears and is healthy: the task goes, and so does the condition.
        def placed(obj: work_pb2.ResourceBinding) -> None:
            obj.spec.clusters.add(name="member2", replicas=3)

        await store.mutate(registry.RESOURCE_BINDING, "default", "nginx-deployment", placed)
        await set_status(store, {"member2": "Healthy"})
        await watch.until(lambda: tasks_of(controllers) == [])
        await watch.until(lambda: get_condition(current(controllers).status.conditions, EVICTION_BLOCKED) is None)


async def test_never_waits_for_the_user(store: MemoryStore) -> None:
    clock = FakeClock(start=RealClock().now().replace(microsecond=0))
    await create_scheduled(store, binding({"member2": 3}, ["member1"], suppressDeletion=True), {"member2": "Healthy"})
    async with running(store, clock) as controllers:
        watch = Watch(controllers.bindings["ResourceBinding"])
        await watch.until(stamped(controllers))
        await clock.advance(86_400)
        assert tasks_of(controllers) == ["member1"]

        def confirm(obj: work_pb2.ResourceBinding) -> None:
            obj.spec.graceful_eviction_tasks[0].suppress_deletion = False

        await store.mutate(registry.RESOURCE_BINDING, "default", "nginx-deployment", confirm)
        await watch.until(lambda: tasks_of(controllers) == [])


def test_the_last_binding_of_a_failover_closes_it_with_the_whole_rto() -> None:
    """Two bindings evicted from member1 in one trace: the first drop leaves the failover open,
    the second closes it with a span from member1 leaving Ready to now."""

    tracer, exporter = recording_tracer()
    root = tracer.start_span("cluster.unhealthy")
    root.end()
    clock = FakeClock(start=RealClock().now().replace(microsecond=0))
    down = make_cluster("member1")
    set_condition(down.status.conditions, "Ready", "False", "ClusterNotReachable", "down",
                  clock.now() - timedelta(seconds=42))

    first, second = binding({"member2": 3}, ["member1"]), binding({"member2": 3}, ["member1"])
    second.metadata.name = "other"
    for rb in (first, second):
        rb.metadata.annotations[TRACEPARENT_ANNOTATION] = traceparent(root)
    bindings = Cache([first, second])
    reconciler = GracefulEvictionReconciler(
        MemoryStore(), clock, {"ResourceBinding": bindings}, tracer=tracer,  # type: ignore[dict-item]
        clusters=Cache([down]))  # type: ignore[arg-type]
    exporter.clear()
    reconciler._close_failover_if_last(first, first.spec.graceful_eviction_tasks[0])
    assert exporter.get_finished_spans() == ()
    del second.spec.graceful_eviction_tasks[:]
    reconciler._close_failover_if_last(first, first.spec.graceful_eviction_tasks[0])
    [closed] = exporter.get_finished_spans()
    assert closed.context.trace_id == root.get_span_context().trace_id
    assert dict(closed.attributes or {})[FAILOVER_RTO_SECONDS] == 42.0
    assert (closed.end_time or 0) - (closed.start_time or 0) == 42 * 10**9


class Overlapping(EventRecorder):
    """Counts how many of its Events are being written at once."""

    def __init__(self, store: MemoryStore) -> None:
        super().__init__(store, "eviction")
        self.under_way = self.most = 0

    async def normal(self, obj: Message, reason: str, message: str) -> None:
        self.under_way += 1
        self.most = max(self.most, self.under_way)
        try:
            for _ in range(3):  # a write that takes a while, as one waiting for etcd does
                await asyncio.sleep(0)
            await super().normal(obj, reason, message)
        finally:
            self.under_way -= 1


async def test_a_dropped_tasks_events_on_binding_and_template_are_written_together(store: MemoryStore) -> None:
    """One after another, each waiting for its commit, they would make the pass that drops a task
    three commits long, and the burst of bindings turning Healthy at the end of a failover would
    drain that much slower."""
    await store.create(deployment())
    await create_scheduled(store, binding({"member2": 3}, ["member1"]), {"member2": "Healthy"})
    recorder = Overlapping(store)
    controllers = EvictionControllers(store, RealClock(), GracefulEvictionConfig(timedelta(minutes=10)),
                                      events=recorder)
    scheduler = others_catch_up(store, controllers)
    written = Informer(store, registry.EVENT)
    tasks = [asyncio.create_task(controllers.run()), asyncio.create_task(written.run())]
    try:
        await Watch(written).until(lambda: sum(e.reason == "EvictWorkloadFromClusterSucceed"
                                               for e in written.list()) == 2)
        assert tasks_of(controllers) == []
        assert recorder.most == 2
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, *scheduler, return_exceptions=True)
