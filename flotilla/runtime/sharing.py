"""Controllers whose keys the replicas of a service divide among themselves (flotilla.store.shards).

`ShardedControllers` puts a service's per-key controllers on buckets of keys: a replica reconciles
a key only while it holds the key's bucket; when it takes a bucket it looks at every key in it,
and it gives a bucket up only once none of its keys is in flight in any of the controllers.
`SharedInformers` lets the same process's leader-only work borrow the informers of its shared
work (Manager(lender=...)), so each event is decoded once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence

from flotilla.aio.tasks import cancel_and_wait
from flotilla.runtime.controller import Controller, Reconciler, Result
from flotilla.runtime.manager import Manager
from flotilla.store.shards import bucket_name, bucket_of

# Buckets a service's keys are divided into: enough to spread over a handful of replicas evenly,
# few enough that their claims are a small read.
BUCKETS = 32


def buckets() -> list[str]:
    return [bucket_name(i) for i in range(BUCKETS)]


class Owned:
    """A reconciler that skips the keys whose bucket this replica does not hold."""

    def __init__(self, reconciler: Reconciler, owns: Callable[[str], bool]) -> None:
        self.reconciler = reconciler
        self.owns = owns

    async def reconcile(self, key: str) -> Result | None:
        if not self.owns(bucket_of(key, BUCKETS)):
            return None
        return await self.reconciler.reconcile(key)


class ShardedControllers:
    """The glue between a ShardCoordinator over `buckets()` and the controllers whose keys it
    divides: `keys()` lists every key those controllers may have (from the informers)."""

    def __init__(self, controllers: Sequence[Controller], keys: Callable[[], Iterable[str]]) -> None:
        self.controllers = controllers
        self.keys = keys

    async def acquire(self, bucket: str) -> None:
        for key in sorted(k for k in self.keys() if bucket_of(k, BUCKETS) == bucket):
            for controller in self.controllers:
                controller.enqueue(key)

    async def release(self, bucket: str) -> None:
        for controller in self.controllers:
            await controller.queue.drained(lambda key: bucket_of(key, BUCKETS) == bucket)


class SharedInformers:
    """The shared work's manager, whose informers the leader's work borrows."""

    def __init__(self) -> None:
        self.manager: Manager | None = None
        self.changed = asyncio.Event()

    def set(self, manager: Manager | None) -> None:
        self.manager = manager
        self.changed.set()
        self.changed = asyncio.Event()

    async def current(self) -> Manager:
        while self.manager is None:
            await self.changed.wait()
        return self.manager

    async def replaced(self, manager: Manager) -> None:
        """Return once `manager` is no longer the shared one (it stopped, or a new one started)."""
        while self.manager is manager:
            await self.changed.wait()

    async def run_lending(self, manager: Manager) -> None:
        """Run the shared work's `manager`, lending its informers for as long as it runs."""
        self.set(manager)
        try:
            await manager.run()
        finally:
            self.set(None)

    async def run_borrowing(self, manager: Manager, lender: Manager) -> None:
        """Run the leader's `manager` (made with `lender=lender`) until it ends or the shared
        manager is replaced, whose informers it borrowed: then it stops, and the error says so."""
        running = asyncio.create_task(manager.run())
        replaced = asyncio.create_task(self.replaced(lender))
        try:
            await asyncio.wait({running, replaced}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            manager.stop()
            await cancel_and_wait(replaced)
            await running
        raise RuntimeError("the shared work restarted: leading again on its new informers")
