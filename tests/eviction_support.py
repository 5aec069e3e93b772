"""What eviction-service tests share: the part the scheduler and the executor play when a
binding's spec changes, so the eviction controllers can be run alone on a MemoryStore."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from flotilla.api import registry
from flotilla.api.bindings import Binding
from flotilla.api.conditions import get_condition, set_condition
from flotilla.api.events import EventType, WatchEvent
from flotilla.api.v1 import work_pb2
from flotilla.store import MemoryStore
from services.eviction.controllers import EvictionControllers


def aggregated_for_this_generation(binding: Binding) -> bool:
    """What the executor's binding-status controller records with aggregatedStatus: the binding
    generation it was computed for (FullyApplied's observedGeneration). Whether it changed."""
    fully_applied = get_condition(binding.status.conditions, "FullyApplied")
    if fully_applied is not None and fully_applied.observed_generation == binding.metadata.generation:
        return False
    set_condition(binding.status.conditions, "FullyApplied", "True", "FullyAppliedSuccess",
                  "All works have been successfully applied", datetime.now(UTC), binding.metadata.generation)
    return True


def others_catch_up(store: MemoryStore, controllers: EvictionControllers,
                    scheduler: bool = True) -> set[asyncio.Task[None]]:
    """On every spec change (the eviction controllers' own task writes, mostly): the executor
    aggregates the Works' status again, and, unless told not to, the scheduler records the
    generation as observed (a change needing no new placement)."""
    pending: set[asyncio.Task[None]] = set()

    async def catch_up(name: str) -> None:
        def change(obj: work_pb2.ResourceBinding) -> bool:
            changed = aggregated_for_this_generation(obj)
            if scheduler and obj.status.scheduler_observed_generation != obj.metadata.generation:
                obj.status.scheduler_observed_generation = obj.metadata.generation
                changed = True
            return changed

        await store.mutate(registry.RESOURCE_BINDING, "default", name, change, status=True)

    def on_change(event: WatchEvent[work_pb2.ResourceBinding]) -> None:
        if event.type is not EventType.DELETED and event.old is not None and (
                event.obj.metadata.generation != event.old.metadata.generation):
            task = asyncio.create_task(catch_up(event.obj.metadata.name))
            pending.add(task)
            task.add_done_callback(pending.discard)

    controllers.manager.on_event(controllers.bindings["ResourceBinding"], on_change)
    return pending
