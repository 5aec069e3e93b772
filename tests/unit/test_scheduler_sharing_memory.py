"""The scheduler shared by bucket (services/scheduler/__main__.py `share`): on a MemoryStore, two
SchedulerLoops holding half the buckets each place only their own bindings, together all of them,
and each one's ledger holds the replicas the other just placed; a loop holding no bucket places
nothing until it takes the buckets (`sharded`, as the shard coordinator does)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from flotilla.aio.clock import RealClock
from flotilla.api import registry
from flotilla.runtime.sharing import buckets, key_bucket
from flotilla.scheduler.framework import Framework
from flotilla.store import MemoryStore
from services.scheduler.controllers import SchedulerLoop
from services.scheduler.reconciler import SchedulerOptions
from tests.background import in_background
from tests.scheduler_support import cluster, duplicated_binding, targets

NAMES = [f"web-{i}" for i in range(24)]
RB = registry.RESOURCE_BINDING.kind
# Long enough that no hold runs out within a test.
OPTIONS = SchedulerOptions(workers=4, reservation_ttl=600.0)


def loop(store: MemoryStore, owns: Callable[[str], bool]) -> SchedulerLoop:
    return SchedulerLoop(store, RealClock(), Framework.build("*", installed={}), OPTIONS, owns=owns)


async def placed(store: MemoryStore) -> dict[str, list[tuple[str, int]]]:
    found = await store.list(registry.RESOURCE_BINDING, "default")
    return {b.metadata.name: targets(b) for b in found.items if b.spec.clusters}


async def until(condition: Callable[[], object], what: str, within: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not await condition():  # type: ignore[misc]
        assert asyncio.get_running_loop().time() < deadline, what
        await asyncio.sleep(0.02)


async def test_two_replicas_place_their_own_bindings_and_hold_each_others_replicas(store: MemoryStore) -> None:
    first = set(buckets()[: len(buckets()) // 2])
    one, other = loop(store, lambda b: b in first), loop(store, lambda b: b not in first)
    mine = {n for n in NAMES if key_bucket(f"default/{n}") in first}
    assert mine and mine != set(NAMES)
    await store.create(cluster("member1"))
    async with in_background(one.run()), in_background(other.run()):
        for name in NAMES:
            await store.create(duplicated_binding(name))

        async def all_placed() -> bool:
            return set(await placed(store)) == set(NAMES)

        await until(all_placed, "every binding placed by the replica holding its bucket")
        assert all(t == [("member1", 2)] for t in (await placed(store)).values())
        found = {b.metadata.name: b for b in (await store.list(registry.RESOURCE_BINDING, "default")).items}
        for name, binding in found.items():
            key, generation = f"default/{name}", binding.metadata.generation
            decided_by = {replica for replica, scheduler in (("one", one), ("other", other))
                          if scheduler.reconcilers[RB].own_change(key, generation)}
            assert decided_by == ({"one"} if name in mine else {"other"}), name

        # Each ledger holds every decision's replicas: its own when made, the other's once read.
        async def both_hold_all() -> bool:
            return all(s.ledger.reserved("member1").pods == 2 * len(NAMES) for s in (one, other))

        await until(both_hold_all, "each replica's ledger holds the other's placements too")


async def test_a_replica_places_a_bucket_only_once_it_takes_it(store: MemoryStore) -> None:
    held: set[str] = set()
    scheduler = loop(store, lambda b: b in held)
    await store.create(cluster("member1"))
    async with in_background(scheduler.run()):
        for name in NAMES:
            await store.create(duplicated_binding(name))
        controller = scheduler.controllers[RB]

        async def all_seen() -> bool:
            return len(scheduler.informers[RB].keys()) == len(NAMES)

        await until(all_seen, "the informer has every binding")
        await controller.queue.drained(lambda _: True)
        assert await placed(store) == {}, "a binding of a bucket not held was placed"

        held.update(buckets())
        for bucket in buckets():
            for part in scheduler.sharded:
                await part.acquire(bucket)

        async def all_placed() -> bool:
            return set(await placed(store)) == set(NAMES)

        await until(all_placed, "every binding placed once its bucket was taken")
