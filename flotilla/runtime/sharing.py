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
from typing import TypeVar

from google.protobuf.message import Message

from flotilla.aio.tasks import cancel_and_wait
from flotilla.api import bindings
from flotilla.api.bindings import Binding
from flotilla.runtime.controller import Controller, Reconciler, Result
from flotilla.runtime.manager import Manager
from flotilla.store.informer import Informer
from flotilla.store.shards import bucket_name, bucket_of

# Buckets a service's keys are divided into: enough to spread over a handful of replicas evenly,
# few enough that their claims are a small read.
BUCKETS = 32
# The informer index of each object's bucket (`index_buckets`), so that taking a bucket reads its
# keys without decoding or hashing every object.
BUCKET_INDEX = "shard-bucket"
M = TypeVar("M", bound=Message)


def buckets() -> list[str]:
    return [bucket_name(i) for i in range(BUCKETS)]


def key_bucket(key: str) -> str:
    return bucket_of(key, BUCKETS)


def index_buckets(informer: Informer[M], key_of: Callable[[M], str], name: str = BUCKET_INDEX) -> None:
    """Index the informer's objects by the bucket of their controller key `key_of(obj)`."""
    informer.add_indexer(name, lambda obj: [key_bucket(key_of(obj))])


def keys_in_bucket(informer: Informer[M], bucket: str, key_of: Callable[[M], str],
                   name: str = BUCKET_INDEX) -> list[str]:
    """The controller keys of the informer's objects in the bucket (indexed by `index_buckets`)."""
    found = (informer.get(k) for k in informer.index_keys(name, bucket))
    return [key_of(obj) for obj in found if obj is not None]


def cache_keys_in_bucket(informer: Informer[M]) -> Callable[[str], frozenset[str]]:
    """A bucket -> the informer's keys in it (indexed by `index_buckets` on the object key, so the
    cache key is the controller key): nothing decoded."""
    return lambda bucket: informer.index_keys(BUCKET_INDEX, bucket)


def index_binding_buckets(informers: dict[str, Informer[Binding]]) -> None:
    for informer in informers.values():
        index_buckets(informer, bindings.key_of)


def binding_keys_in_bucket(informers: dict[str, Informer[Binding]], bucket: str) -> list[str]:
    """The binding keys (`Kind:namespace/name`) in the bucket, nothing decoded."""
    return [bindings.binding_key(kind, key) for kind, informer in informers.items()
            for key in informer.index_keys(BUCKET_INDEX, bucket)]


class Owned:
    """A reconciler that skips the keys whose bucket this replica does not hold."""

    def __init__(self, reconciler: Reconciler, owns: Callable[[str], bool]) -> None:
        self.reconciler = reconciler
        self.owns = owns

    def admits(self, key: str) -> bool:
        return self.owns(key_bucket(key))

    async def reconcile(self, key: str) -> Result | None:
        if not self.admits(key):
            return None
        return await self.reconciler.reconcile(key)


class ShardedControllers:
    """The glue between a ShardCoordinator over `buckets()` and the controllers whose keys it
    divides: `keys(bucket)` lists every key in the bucket those controllers may have (from the
    informers)."""

    def __init__(self, controllers: Sequence[Controller], keys: Callable[[str], Iterable[str]]) -> None:
        self.controllers = controllers
        self.keys = keys

    async def acquire(self, bucket: str) -> None:
        for key in sorted(self.keys(bucket)):
            for controller in self.controllers:
                controller.enqueue(key)

    async def release(self, bucket: str) -> None:
        for controller in self.controllers:
            await controller.queue.drained(lambda key: key_bucket(key) == bucket)


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
