"""Work shared across replicas on a real etcd (flotilla.store.shards, issue 38): three replicas
divide the shards; one leaves, one dies without a word, one joins, while each replica's work on a
shard takes a while to stop. At no moment do two replicas act on one shard, and in the end each
shard is acted on by the replica `owner_of` names among those alive."""

from __future__ import annotations

import asyncio
import time

from flotilla.aio.clock import RealClock
from flotilla.store import Store
from flotilla.store.shards import ShardCoordinator, owner_of
from tests.unit.test_shards_memory import SHARDS, Acting

TTL = 4
DEADLINE = 30.0


def coordinator(store: Store, acting: Acting, name: str) -> ShardCoordinator:
    acquire, release = acting.callbacks(name)

    async def slow_release(shard: str) -> None:
        await asyncio.sleep(0.05)  # work in flight finishing
        await release(shard)  # type: ignore[misc]

    return ShardCoordinator(store, RealClock(), "svc", name, TTL, lambda: SHARDS,
                            acquire, slow_release)  # type: ignore[arg-type]


async def until_settled(acting: Acting, alive: list[str]) -> None:
    end = time.monotonic() + DEADLINE
    wanted = {s: owner_of(s, alive) for s in SHARDS}
    while acting.by_shard != wanted:
        assert time.monotonic() < end, f"not settled on {alive}: {acting.by_shard}"
        assert not acting.overlaps, acting.overlaps
        await asyncio.sleep(0.05)  # the replicas work against etcd: poll what they act on


async def test_replicas_never_act_on_one_shard_at_once_through_joins_leaves_and_a_death(store: Store) -> None:
    acting = Acting()
    replicas = {name: coordinator(store, acting, name) for name in ("a", "b", "c")}
    tasks = {name: asyncio.create_task(c.run()) for name, c in replicas.items()}
    try:
        await until_settled(acting, ["a", "b", "c"])

        # b leaves: it stops its work and lets its claims go; a and c take them at once.
        tasks.pop("b").cancel()
        left = time.monotonic()
        await until_settled(acting, ["a", "c"])
        assert time.monotonic() - left < TTL, "a graceful leave is handed over before any lease runs out"

        # c dies: no release, no revoke; its work stops with it. Its shards move once its lease ends.
        dead = replicas["c"]
        keepalive = dead.lease._task
        assert keepalive is not None
        dead._drop_all = _nothing  # type: ignore[method-assign]
        dead.lease.revoke = _nothing  # type: ignore[method-assign]
        tasks.pop("c").cancel()
        keepalive.cancel()
        for shard in [s for s, n in acting.by_shard.items() if n == "c"]:
            del acting.by_shard[shard]
        await until_settled(acting, ["a"])

        # d joins: it takes only the shards it wins, from a, which stops first.
        replicas["d"] = coordinator(store, acting, "d")
        tasks["d"] = asyncio.create_task(replicas["d"].run())
        await until_settled(acting, ["a", "d"])
        assert not acting.overlaps, acting.overlaps
    finally:
        for task in tasks.values():
            task.cancel()
        await asyncio.gather(*tasks.values(), return_exceptions=True)


async def _nothing(*_: object) -> None:
    return None
