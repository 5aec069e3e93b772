"""Garbage under a binding key, written mid-run by something that is not Flotilla: the
scheduler's watch keeps going, every other binding is still scheduled, and the bad key is
reported once as an Event and a metric instead of stopping the service."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import REGISTRY

from flotilla.aio.clock import RealClock
from flotilla.api import registry
from flotilla.api.v1 import core_pb2
from flotilla.runtime.manager import UNDECODABLE_REASON, Manager
from flotilla.scheduler.framework import Framework
from flotilla.store import Store
from flotilla.store.events import EventRecorder
from services.scheduler.controllers import SchedulerLoop
from services.scheduler.reconciler import SchedulerOptions
from tests.scheduler_support import Bindings, cluster, duplicated_binding, placed

pytestmark = pytest.mark.integration

BAD_KEY = "/flotilla/resourcebindings/default/garbage"


def undecodable_count() -> float:
    return REGISTRY.get_sample_value("flotilla_store_undecodable_objects_total", {"resource": "resourcebindings"}) or 0


async def test_garbage_under_a_binding_key_does_not_stop_scheduling(store: Store) -> None:
    health: list[str] = []
    manager = Manager(store, RealClock(), events=EventRecorder(store, "scheduler"),
                      on_unhealthy=lambda name, err: health.append(f"NOT_SERVING {name}"))
    SchedulerLoop(store, RealClock(), Framework.build("*", installed={}), SchedulerOptions(workers=2),
                  manager=manager)
    await store.create(cluster("member1"))
    await store.create(duplicated_binding("before"))
    # Present before the first list, and written again while the watch runs.
    await store.client.put(BAD_KEY.encode(), b"\xff\x00 not a protobuf")
    seen_before = undecodable_count()
    rbs = Bindings(store, registry.RESOURCE_BINDING)
    tasks = [asyncio.create_task(rbs.informer.run()), asyncio.create_task(manager.run())]
    try:
        await rbs.wait("default/before", placed(("member1", 2)))
        await store.client.put(BAD_KEY.encode(), b"\x0a\xff\xff garbage again")
        await store.create(duplicated_binding("after"))
        await rbs.wait("default/after", placed(("member1", 2)))

        async with asyncio.timeout(20):
            while True:
                events = [e for e in (await store.list(core_pb2.Event, "default")).items
                          if e.reason == UNDECODABLE_REASON]
                if sum(e.count for e in events) >= 2:
                    break
                await asyncio.sleep(0.05)
        for event in events:
            assert event.type == "Warning"
            assert (event.involved_object.kind, event.involved_object.name) == ("ResourceBinding", "garbage")
            assert BAD_KEY in event.message
        # The scheduler's informer and the test's own both skipped it, each time it was written.
        assert undecodable_count() - seen_before >= 2
        assert health == []
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await store.client.delete(BAD_KEY.encode())
