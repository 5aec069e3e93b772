"""One owner per binding field (flotilla/api/owners.py), checked on a whole failover in memory.

The executor, the scheduler, the taint manager and the eviction service run their real
controllers, each on a store tagged with the service's name; the test plays the status service
(member1's Ready) and the members (the Works' statuses). Every binding write is diffed field by
field (the top-level fields of spec and status, conditions by type, the annotations), and a
service that changed a field the table does not give it fails the test."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

from flotilla.aio.clock import RealClock
from flotilla.api import bindings, keys, owners, registry
from flotilla.api.conditions import FALSE, get_condition, set_condition
from flotilla.api.v1 import work_pb2
from flotilla.scheduler.framework import Framework
from flotilla.store import MemoryStore
from flotilla.store.base import copy_of
from services.eviction.controllers import EvictionControllers
from services.executor.controllers import ExecutorControllers
from services.scheduler.controllers import SchedulerLoop
from services.scheduler.reconciler import SchedulerOptions
from services.taint_manager.cluster_taints import TaintConfig
from services.taint_manager.controllers import TaintManager
from services.taint_manager.evictor import EvictorConfig
from services.taint_manager.protection import EvictionProtection, ProtectionConfig
from tests.scheduler_support import cluster
from tests.unit.test_executor_binding_flow_memory import (
    WORK_NAME,
    deployment_status,
    manifest,
    release,
    report,
    seed,
)

# Who is writing: set by a service's store around each of its writes (the test's own are "test").
WRITER: contextvars.ContextVar[str] = contextvars.ContextVar("writer", default="test")
BINDING_PREFIXES = tuple(keys.etcd_prefix(kind.resource_type.resource, None) for kind in bindings.BINDING_KINDS)
KEY = "default/nginx-deployment"


@dataclass(frozen=True)
class Write:
    writer: str
    key: str
    old: bytes | None
    new: bytes


class RecordingStore(MemoryStore):
    """A MemoryStore that keeps every binding write: who, and the value before and after."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[Write] = []

    def _commit(self, changes: list[tuple[str, bytes | None, int | None]]) -> int:
        for key, value, _ in changes:
            if value is not None and key.startswith(BINDING_PREFIXES):
                old = self._data.get(key)
                self.writes.append(Write(WRITER.get(), key, old.value if old is not None else None, value))
        return super()._commit(changes)


class Tagged:
    """A service's view of the store: its writes are tagged with its name."""

    def __init__(self, store: MemoryStore, service: str) -> None:
        self._store = store
        self._service = service

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def _as_service(self, write: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        token = WRITER.set(self._service)
        try:
            return await write(*args, **kwargs)
        finally:
            WRITER.reset(token)

    async def create(self, *args: Any, **kwargs: Any) -> Any:
        return await self._as_service(self._store.create, *args, **kwargs)

    async def update(self, *args: Any, **kwargs: Any) -> Any:
        return await self._as_service(self._store.update, *args, **kwargs)

    async def update_status(self, *args: Any, **kwargs: Any) -> Any:
        return await self._as_service(self._store.update_status, *args, **kwargs)

    async def mutate(self, *args: Any, **kwargs: Any) -> Any:
        return await self._as_service(self._store.mutate, *args, **kwargs)

    async def delete(self, *args: Any, **kwargs: Any) -> Any:
        return await self._as_service(self._store.delete, *args, **kwargs)


def fields_of(binding: bindings.Binding | None) -> dict[str, Any]:
    """Field name (as in owners.FIELDS) -> value, for every field set."""
    if binding is None:
        return {}
    found: dict[str, Any] = {}
    for part in ("spec", "status"):
        for descriptor, value in getattr(binding, part).ListFields():
            if (part, descriptor.name) != ("status", "conditions"):
                found[f"{part}.{descriptor.json_name}"] = value
    for condition in binding.status.conditions:
        found[owners.condition(condition.type)] = condition
    for key, value in binding.metadata.annotations.items():
        found[owners.annotation(key)] = value
    return found


def changed_fields(old: bindings.Binding | None, new: bindings.Binding) -> set[str]:
    before, after = fields_of(old), fields_of(new)
    return {name for name in before.keys() | after.keys() if before.get(name) != after.get(name)}


def trespasses(writer: str, old: bindings.Binding | None, new: bindings.Binding) -> list[str]:
    """What `writer` changed that the table does not let it."""
    found = []
    for name in sorted(changed_fields(old, new)):
        field = owners.BY_NAME.get(name)
        if field is None:
            found.append(f"{writer} wrote {name}, which owners.FIELDS does not list")
        elif writer not in field.writers():
            found.append(f"{writer} wrote {name}, owned by {field.owner} (others: "
                         f"{', '.join(w.service for w in field.others) or 'none'})")
    return found


def decoded(store: MemoryStore, write: Write) -> tuple[bindings.Binding | None, bindings.Binding]:
    rt = next(k.resource_type for k in bindings.BINDING_KINDS
              if write.key.startswith(keys.etcd_prefix(k.resource_type.resource, None)))
    old = store.decode(rt, write.old, 0, write.key) if write.old is not None else None
    return old, store.decode(rt, write.new, 0, write.key)


def test_a_service_writing_a_field_it_does_not_own_is_found() -> None:
    old = work_pb2.ResourceBinding()
    new = copy_of(old)
    new.status.aggregated_status.add(cluster_name="member1", health="Healthy")
    assert trespasses(owners.SCHEDULER, old, new) == [
        "scheduler wrote status.aggregatedStatus, owned by executor (others: eviction)"]
    assert trespasses(owners.EXECUTOR, old, new) == []
    set_condition(new.status.conditions, "Scheduled", "True", "Success", "", RealClock().now(), 1)
    new.metadata.annotations["example.com/unknown"] = "x"
    assert trespasses(owners.EXECUTOR, old, new) == [
        "executor wrote metadata.annotations[example.com/unknown], which owners.FIELDS does not list",
        "executor wrote status.conditions[Scheduled], owned by scheduler (others: eviction)"]


@contextlib.asynccontextmanager
async def plane(store: RecordingStore) -> AsyncIterator[None]:
    clock = RealClock()
    tracer = TracerProvider().get_tracer("test")
    services = [
        ExecutorControllers(Tagged(store, owners.EXECUTOR), clock, tracer=tracer),  # type: ignore[arg-type]
        SchedulerLoop(Tagged(store, owners.SCHEDULER), clock, Framework.build("*", installed={}),  # type: ignore[arg-type]
                      SchedulerOptions(retry_after=0.05, workers=2), tracer=tracer),
        TaintManager(Tagged(store, owners.TAINT_MANAGER), clock,  # type: ignore[arg-type]
                     EvictionProtection(clock, ProtectionConfig()),
                     TaintConfig(eviction_timeout=timedelta(milliseconds=100)), EvictorConfig(), workers=2,
                     tracer=tracer),
        EvictionControllers(Tagged(store, owners.EVICTION), clock, workers=2, tracer=tracer),  # type: ignore[arg-type]
    ]
    tasks = [asyncio.create_task(s.run()) for s in services]
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def until(store: MemoryStore, what: str, ready: Callable[[], Any]) -> None:
    try:
        async with asyncio.timeout(30):
            while not await ready():
                await asyncio.sleep(0.01)
    except TimeoutError:
        pytest.fail(f"never: {what}")


async def binding_of(store: MemoryStore) -> work_pb2.ResourceBinding | None:
    return await store.try_get(registry.RESOURCE_BINDING, "default", "nginx-deployment")


async def work_of(store: MemoryStore, name: str) -> work_pb2.Work | None:
    return await store.try_get(registry.WORK, keys.execution_namespace(name), WORK_NAME)


@contextlib.contextmanager
def writing_as(service: str) -> Iterator[None]:
    token = WRITER.set(service)
    try:
        yield
    finally:
        WRITER.reset(token)


async def test_every_binding_write_of_a_failover_is_its_writers_to_make() -> None:
    store = RecordingStore()
    for name in ("member1", "member2"):
        await store.create(cluster(name))
    template, policy = seed()
    await store.create(template)
    await store.create(policy)
    async with plane(store):
        async def placed() -> bool:
            binding = await binding_of(store)
            return binding is not None and [(t.name, t.replicas) for t in binding.spec.clusters] == [
                ("member1", 1), ("member2", 2)]

        await until(store, "placed on member1 and member2", placed)

        async def works() -> bool:
            return all([await work_of(store, name) is not None for name in ("member1", "member2")])

        await until(store, "a Work on each member", works)
        await report(store, "member1", deployment_status(1))
        await report(store, "member2", deployment_status(2))

        async def aggregated() -> bool:
            binding = await binding_of(store)
            condition = get_condition(binding.status.conditions, "FullyApplied") if binding else None
            return condition is not None and condition.status == "True" and all(
                i.health == "Healthy" for i in binding.status.aggregated_status)

        await until(store, "FullyApplied", aggregated)

        # The status service: member1 leaves Ready.
        def not_ready(obj: Any) -> bool:
            return set_condition(obj.status.conditions, "Ready", FALSE, "ClusterNotReachable", "probes fail",
                                 RealClock().now())

        with writing_as(owners.STATUS):
            await store.mutate(registry.CLUSTER, "", "member1", not_ready, status=True)

        async def moved() -> bool:
            work = await work_of(store, "member2")
            return work is not None and manifest(work)["spec"]["replicas"] == 3

        await until(store, "member2's Work asks for 3 replicas", moved)
        await report(store, "member2", deployment_status(3))

        async def recovered() -> bool:
            binding = await binding_of(store)
            return (binding is not None and not binding.spec.graceful_eviction_tasks
                    and bool(binding.status.failover_history)
                    and binding.status.failover_history[0].HasField("recovered_time"))

        await until(store, "the task dropped and the failover recovered", recovered)

        async def purged() -> bool:
            work = await work_of(store, "member1")
            if work is not None and work.metadata.HasField("deletion_timestamp"):
                await release(store, "member1")
            return work is None

        await until(store, "member1's Work gone", purged)
        await asyncio.sleep(0.2)  # what the last writes bring about
    final = await binding_of(store)
    assert final is not None and [(t.name, t.replicas) for t in final.spec.clusters] == [("member2", 3)]
    [record] = final.status.failover_history
    assert record.from_cluster == "member1" and list(record.to_clusters) == ["member2"]

    # The failover is three binding writes, each carrying the others' contributions: the eviction,
    # the placement, the task drop (docs/architecture.md, "Who writes what").
    evicted = next(i for i, w in enumerate(store.writes) if w.writer == owners.TAINT_MANAGER)
    failover = [w.writer for w in store.writes[evicted:] if w.writer != owners.EXECUTOR]
    assert failover == [owners.TAINT_MANAGER, owners.SCHEDULER, owners.EVICTION]
    assert store.writes[-1].writer == owners.EVICTION, "the task drop left the executor nothing to write"
    writers = {w.writer for w in store.writes}
    assert {owners.EXECUTOR, owners.SCHEDULER, owners.TAINT_MANAGER, owners.EVICTION} <= writers
    assert writers <= set(owners.SERVICES), "every binding write is a service's"
    found = [t for write in store.writes for t in trespasses(write.writer, *decoded(store, write))]
    assert found == []
    written = {(w.writer, name) for w in store.writes for name in changed_fields(*decoded(store, w))}
    # The failover's own contributions were made, each by its writer.
    for expected in ((owners.TAINT_MANAGER, "spec.gracefulEvictionTasks"),
                     (owners.TAINT_MANAGER, "status.failoverHistory"),
                     (owners.SCHEDULER, "status.failoverHistory"),
                     (owners.EVICTION, "status.failoverHistory"),
                     (owners.TAINT_MANAGER, owners.annotation("flotilla.io/traceparent")),
                     (owners.SCHEDULER, owners.annotation("policy.karmada.io/applied-placement"))):
        assert expected in written
