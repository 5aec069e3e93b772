"""schedulePriority in the scheduler's queue, in-process on a MemoryStore: when a failover storm
reaches the scheduler at once and the cluster left has room for only some of it, every binding
of a higher `spec.schedulePriority.priority` is placed before any of a lower one, and the lower
ones get what is left (Karmada's priority scheduling queue; issue 36)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from flotilla.aio.clock import RealClock
from flotilla.api import codec, registry
from flotilla.api.conditions import get_condition
from flotilla.scheduler.framework import Framework
from flotilla.store import MemoryStore
from services.scheduler.controllers import SchedulerLoop
from services.scheduler.reconciler import SchedulerOptions
from tests.scheduler_support import Bindings, cluster, targets

pytestmark = pytest.mark.timeout(60)

CRITICAL, BATCH = 20, 30
# member2 has 25 CPUs free (26 allocatable, 1 allocated): every critical binding and 5 batch ones.
ROOM = 25


def binding(name: str, priority: int) -> Any:
    """One replica of one CPU, evicted from member1 (spec.clusters empty), to be placed anew."""
    return codec.from_dict({
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
        "metadata": {"name": f"{name}-deployment", "namespace": "default",
                     "labels": {"propagationpolicy.karmada.io/permanent-id": "p-1"}},
        "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": name},
                 "replicas": 1, "replicaRequirements": {"resourceRequest": {"cpu": "1"}},
                 "placement": {"replicaScheduling": {"replicaSchedulingType": "Divided",
                                                     "replicaDivisionPreference": "Aggregated"}},
                 "schedulerName": "default-scheduler", "schedulePriority": {"priority": priority}},
    })


@pytest.fixture
async def loop(store: MemoryStore) -> AsyncIterator[SchedulerLoop]:
    # Retries an hour away: only the cluster's change brings the failed bindings back, all at once.
    scheduler = SchedulerLoop(store, RealClock(), Framework.build("*", installed={}),
                              SchedulerOptions(retry_initial=3600, retry_after=3600, workers=4))
    task = asyncio.create_task(scheduler.run())
    yield scheduler
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def condition_status(obj: Any) -> str | None:
    condition = get_condition(obj.status.conditions, "Scheduled")
    return condition.status if condition is not None else None


async def test_a_storm_places_every_critical_binding_before_any_batch_one(
        store: MemoryStore, loop: SchedulerLoop) -> None:
    rbs = Bindings(store, registry.RESOURCE_BINDING)
    watching = asyncio.create_task(rbs.informer.run())
    try:
        await rbs.informer.wait_synced()
        # The backup's discovery timed out: it serves no APIs until its next collection.
        member2 = cluster("member2", cpu=str(ROOM + 1))
        del member2.status.api_enablements[:]
        await store.create(member2)
        # Batch work first: in arrival order it would take all the room.
        names = [(f"batch-{i:02}", 0) for i in range(BATCH)] + [(f"critical-{i:02}", 1000) for i in range(CRITICAL)]
        for name, priority in names:
            await store.create(binding(name, priority))
        async with asyncio.timeout(30), rbs.changed:
            await rbs.changed.wait_for(lambda: sum(condition_status(b) == "False" for b in rbs.informer.list())
                                       == len(names))

        # The backup serves Deployments again: all 50 failed bindings are back in the queue at once.
        def serve_deployments(obj: Any) -> bool:
            obj.status.api_enablements.add(group_version="apps/v1").resources.add(
                name="deployments", kind="Deployment")
            return True

        await store.mutate(registry.CLUSTER, "", "member2", serve_deployments, status=True)

        def placed(obj: Any) -> bool:
            return targets(obj) == [("member2", 1)]

        def decided() -> bool:
            bindings = rbs.informer.list()
            return (sum(placed(b) for b in bindings) == ROOM
                    and sum(condition_status(b) == "True" for b in bindings) == ROOM)

        async with asyncio.timeout(30), rbs.changed:
            await rbs.changed.wait_for(decided)
        await asyncio.sleep(0.2)  # nothing more is placed: the room is used up
        bindings = {b.spec.resource.name: b for b in rbs.informer.list()}
        critical = [b for name, b in bindings.items() if name.startswith("critical-")]
        batch = [b for name, b in bindings.items() if name.startswith("batch-")]
        assert all(placed(b) for b in critical), [b.spec.resource.name for b in critical if not placed(b)]
        assert sum(placed(b) for b in batch) == ROOM - CRITICAL
        assert sum(condition_status(b) == "False" for b in batch) == BATCH - (ROOM - CRITICAL)
        # Placed first: each critical decision is at least as early as every batch one.
        last_critical = max(b.status.last_scheduled_time.ToNanoseconds() for b in critical)
        first_batch = min(b.status.last_scheduled_time.ToNanoseconds() for b in batch if placed(b))
        assert last_critical <= first_batch
    finally:
        watching.cancel()
        await asyncio.gather(watching, return_exceptions=True)
