"""A scheduler whose binding watch dies: the Manager reports it NOT_SERVING, restarts the
informer, reports SERVING again, and bindings created before and after are still scheduled.
On a MemoryStore: the supervision is the Manager's, not etcd's."""

from __future__ import annotations

import asyncio

from flotilla.aio.clock import RealClock
from flotilla.api import registry
from flotilla.runtime.manager import Manager
from flotilla.scheduler.framework import Framework
from flotilla.store import MemoryStore
from services.scheduler.controllers import SchedulerLoop
from services.scheduler.reconciler import SchedulerOptions
from tests.scheduler_support import Bindings, cluster, duplicated_binding, placed


async def test_a_dead_binding_watch_is_restarted_and_reported(store: MemoryStore) -> None:
    health: list[str] = []
    manager = Manager(store, RealClock(), backoff=(0.02, 0.1),
                      on_unhealthy=lambda name, err: health.append(f"NOT_SERVING {name} {err}"),
                      on_healthy=lambda: health.append("SERVING"))
    loop = SchedulerLoop(store, RealClock(), Framework.build("*", installed={}), SchedulerOptions(workers=2),
                         manager=manager)
    informer = loop.informers[registry.RESOURCE_BINDING.kind]
    real_run = informer.run
    crash = asyncio.Event()

    async def run_then_crash_once() -> None:
        # The first run watches until told to crash, as a watch broken by a bug would.
        informer.run = real_run  # type: ignore[method-assign]
        watching = asyncio.create_task(real_run())
        try:
            await asyncio.wait({watching, asyncio.create_task(crash.wait())}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            watching.cancel()
            await asyncio.gather(watching, return_exceptions=True)
        raise RuntimeError("watch handler bug")

    informer.run = run_then_crash_once  # type: ignore[method-assign]
    await store.create(cluster("member1"))
    rbs = Bindings(store, registry.RESOURCE_BINDING)
    tasks = [asyncio.create_task(rbs.informer.run()), asyncio.create_task(manager.run())]
    try:
        await rbs.informer.wait_synced()
        await store.create(duplicated_binding("before"))
        await rbs.wait("default/before", placed(("member1", 2)))

        crash.set()
        async with asyncio.timeout(10):
            while health != ["NOT_SERVING informer/resourcebindings watch handler bug"]:
                await asyncio.sleep(0.01)
        # Created while nothing watches: the restarted watch resumes from its revision and sees it.
        await store.create(duplicated_binding("while-down"))
        async with asyncio.timeout(10):
            while not manager.healthy:
                await asyncio.sleep(0.01)
        assert health[-1] == "SERVING"
        await store.create(duplicated_binding("after"))
        await rbs.wait("default/while-down", placed(("member1", 2)))
        await rbs.wait("default/after", placed(("member1", 2)))
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
