"""An evicted binding's aggregation waits for the scheduler's decision of its new generation
(flotilla/rules/aggregated_status.py, awaits_reschedule): FullyApplied judged for the generation
in between is read by nobody and costs a write of the binding that every service reads. The
decision, even one that writes no placement, brings the aggregation."""

from __future__ import annotations

import asyncio

from flotilla.api import registry
from flotilla.api.conditions import get_condition
from flotilla.store import ObjectStore
from services.executor.controllers import ExecutorControllers
from tests.unit.test_executor_binding_flow_memory import (
    deployment_status,
    report,
    running,
    schedule,
    seed,
    watching,
)

KEY = "default/nginx-deployment"


def judged_for(binding: object) -> int | None:
    condition = get_condition(binding.status.conditions, "FullyApplied")  # type: ignore[attr-defined]
    return None if condition is None else int(condition.observed_generation)


async def settled(controllers: ExecutorControllers) -> None:
    """Until the binding-status controller has nothing queued or in flight."""
    queue = controllers.binding_status.queue
    async with asyncio.timeout(30):
        while True:
            await queue.drained(lambda _: True)
            if len(queue) == 0:
                return
            await asyncio.sleep(0.01)


async def test_an_evicted_binding_is_aggregated_once_the_scheduler_has_decided(store: ObjectStore) -> None:
    template, policy = seed()
    await store.create(template)
    await store.create(policy)
    async with running(store) as controllers, watching(store, registry.RESOURCE_BINDING) as bindings:
        await bindings.until(lambda: bindings.informer.get(KEY) is not None)
        await schedule(store, "default", "nginx-deployment", [("member1", 1), ("member2", 2)])
        await report(store, "member1", deployment_status(1))
        await report(store, "member2", deployment_status(2))
        placed = bindings.informer.get(KEY).metadata.generation
        await bindings.until(lambda: judged_for(bindings.informer.get(KEY)) == placed)

        def evict(binding: object) -> None:
            spec = binding.spec  # type: ignore[attr-defined]
            spec.graceful_eviction_tasks.add(from_cluster="member1", purge_mode="Gracefully",
                                             reason="TaintUntolerated", producer="TaintManager")
            del spec.clusters[0]

        await store.mutate(registry.RESOURCE_BINDING, "default", "nginx-deployment", evict)
        evicted = placed + 1
        executor_view = controllers.bindings["ResourceBinding"]
        await bindings.until(lambda: executor_view.get(KEY) is not None
                             and executor_view.get(KEY).metadata.generation == evicted)
        # A member report meanwhile brings the binding-status controller round again.
        await report(store, "member2", {**deployment_status(2), "readyReplicas": 1})
        await settled(controllers)
        assert judged_for(await store.get(registry.RESOURCE_BINDING, "default", "nginx-deployment")) == placed

        # The scheduler decides the new generation and keeps the placement: a status write only.
        def observed(binding: object) -> None:
            binding.status.scheduler_observed_generation = evicted  # type: ignore[attr-defined]

        await store.mutate(registry.RESOURCE_BINDING, "default", "nginx-deployment", observed, status=True)
        await bindings.until(lambda: judged_for(bindings.informer.get(KEY)) == evicted)
