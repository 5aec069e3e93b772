"""Work shared across replicas (flotilla.store.shards, issue 38): rendezvous assignment, and
coordinators on one store that divide the shards, hand them over when a replica joins, leaves or
dies, and never let two replicas act on one shard at once."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

import pytest

from flotilla.aio.clock import FakeClock
from flotilla.store.lease import KeptLease
from flotilla.store.memory import MemoryStore
from flotilla.store.shards import ShardCoordinator, claims_prefix, owner_of

SHARDS = [f"member{i:02d}" for i in range(24)]
TTL = 10
DEADLINE = 30.0


# -- assignment ------------------------------------------------------------------------------


def assignment(members: list[str]) -> dict[str, str | None]:
    return {s: owner_of(s, members) for s in SHARDS}


def test_no_members_no_owner() -> None:
    assert owner_of("member1", []) is None


def test_every_member_that_sees_the_same_members_agrees() -> None:
    assert assignment(["a", "b", "c"]) == assignment(["c", "a", "b"])
    assert set(assignment(["a", "b", "c"]).values()) == {"a", "b", "c"}


@pytest.mark.parametrize(("before", "after"), [
    (["a", "b", "c"], ["a", "b"]),        # c leaves: only c's shards move
    (["a", "b"], ["a", "b", "c"]),        # c joins: only the shards c wins move, all to c
    (["a"], ["a", "b"]),
])
def test_a_join_or_leave_moves_only_the_shards_of_the_member_that_came_or_went(
        before: list[str], after: list[str]) -> None:
    old, new = assignment(before), assignment(after)
    moved = {s for s in SHARDS if old[s] != new[s]}
    changed = set(before) ^ set(after)
    assert moved and all(old[s] in changed or new[s] in changed for s in moved)


# -- coordinators ----------------------------------------------------------------------------


class Acting:
    """Which replica acts on which shard; acting on one another acts on fails the test."""

    def __init__(self) -> None:
        self.by_shard: dict[str, str] = {}
        self.overlaps: list[str] = []
        self.release_gate: dict[str, asyncio.Event] = {}

    def callbacks(self, name: str) -> tuple[Callable[[str], object], Callable[[str], object]]:
        async def acquire(shard: str) -> None:
            if shard in self.by_shard:
                self.overlaps.append(f"{name} acquired {shard} while {self.by_shard[shard]} acts on it")
            self.by_shard[shard] = name

        async def release(shard: str) -> None:
            gate = self.release_gate.get(shard)
            if gate is not None:
                await gate.wait()  # work still in flight
            if self.by_shard.get(shard) == name:
                del self.by_shard[shard]

        return acquire, release

    def of(self, name: str) -> set[str]:
        return {s for s, n in self.by_shard.items() if n == name}


@contextlib.asynccontextmanager
async def replica(store: MemoryStore, clock: FakeClock, acting: Acting, name: str,
                  shards: list[str] | None = None,
                  reports: list[str | None] | None = None) -> AsyncIterator[ShardCoordinator]:
    acquire, release = acting.callbacks(name)

    async def report(reason: str | None) -> None:
        if reports is not None:
            reports.append(reason)

    coordinator = ShardCoordinator(store, clock, "executor", name, TTL, lambda: shards or SHARDS,
                                   acquire, release, report=report)  # type: ignore[arg-type]
    task = asyncio.create_task(coordinator.run())
    try:
        yield coordinator
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def until(condition: Callable[[], bool], clock: FakeClock) -> None:
    """Await the condition, moving the fake clock a little now and then (rebalancing also runs
    on a timer); generous real-time deadline."""
    loop = asyncio.get_running_loop()
    end = loop.time() + DEADLINE
    while not condition():
        assert loop.time() < end, "condition not met in time"
        await asyncio.sleep(0.01)
        await clock.advance(0.5)


def settled(acting: Acting, *names: str) -> Callable[[], bool]:
    def check() -> bool:
        return all(acting.of(n) == {s for s in SHARDS if owner_of(s, list(names)) == n} for n in names)
    return check


async def test_one_replica_takes_every_shard(memory: MemoryStore, clock: FakeClock) -> None:
    acting = Acting()
    async with replica(memory, clock, acting, "a") as a:
        await until(lambda: acting.of("a") == set(SHARDS), clock)
        assert a.held == frozenset(SHARDS) and all(a.owns(s) for s in SHARDS)


async def test_replicas_divide_the_shards_and_hand_them_over_on_join_and_leave(
        memory: MemoryStore, clock: FakeClock) -> None:
    acting = Acting()
    async with replica(memory, clock, acting, "a") as a:
        await until(lambda: acting.of("a") == set(SHARDS), clock)
        async with replica(memory, clock, acting, "b") as b:
            await until(settled(acting, "a", "b"), clock)
            assert a.held.isdisjoint(b.held) and a.held | b.held == set(SHARDS)
            assert 0 < len(b.held) < len(SHARDS)
            claims, _ = await memory.kv_range(claims_prefix("executor"))
            assert {kv.key.rsplit("/", 1)[1]: kv.value.decode() for kv in claims} == {
                s: owner_of(s, ["a", "b"]) for s in SHARDS}
        # b left (its claims went with its lease): a has everything again.
        await until(lambda: acting.of("a") == set(SHARDS), clock)
    assert not acting.overlaps


async def test_a_replica_whose_keys_were_deleted_by_hand_joins_again_and_takes_its_share_back(
        memory: MemoryStore, clock: FakeClock) -> None:
    acting = Acting()
    async with replica(memory, clock, acting, "a") as a:
        await until(lambda: acting.of("a") == set(SHARDS), clock)
        kept, _ = await memory.kv_range("/flotilla/shards/")
        for kv in kept:
            assert await memory.kv_delete_if(kv.key, kv.mod_revision)
        async def claimed() -> dict[str, str]:
            claims, _ = await memory.kv_range(claims_prefix("executor"))
            return {kv.key.rsplit("/", 1)[1]: kv.value.decode() for kv in claims}

        async with asyncio.timeout(DEADLINE):
            while await claimed() != {s: "a" for s in SHARDS}:
                await until(lambda: True, clock)  # a rebalance tick
        assert a.held == frozenset(SHARDS) and acting.of("a") == set(SHARDS)
        members, _ = await memory.kv_range("/flotilla/shards/executor/members/")
        assert [kv.key.rsplit("/", 1)[1] for kv in members] == ["a"]
    assert not acting.overlaps


async def test_a_dead_replicas_shards_move_once_its_lease_expires(memory: MemoryStore, clock: FakeClock) -> None:
    acting = Acting()
    async with replica(memory, clock, acting, "a") as a:
        dead = ShardCoordinator(memory, clock, "executor", "b", TTL, lambda: SHARDS,
                                *acting.callbacks("b"))  # type: ignore[arg-type]
        task = asyncio.create_task(dead.run())
        await until(settled(acting, "a", "b"), clock)
        b_shards = acting.of("b")
        # b dies without a word: no release, no revoke; its work simply stops.
        dead._drop_all = _nothing  # type: ignore[method-assign]
        dead.lease.revoke = _nothing  # type: ignore[method-assign]
        keepalive = dead.lease._task
        assert keepalive is not None
        task.cancel()
        keepalive.cancel()
        await asyncio.gather(task, keepalive, return_exceptions=True)
        for shard in b_shards:
            del acting.by_shard[shard]
        assert not any(a.owns(s) for s in b_shards), "not before b's lease ends"
        await clock.advance(TTL + 1)
        memory.expire_leases()
        await until(lambda: acting.of("a") == set(SHARDS), clock)
    assert not acting.overlaps


async def _nothing(*_: object) -> None:
    return None


async def test_a_shard_is_not_taken_over_while_its_work_is_in_flight(memory: MemoryStore, clock: FakeClock) -> None:
    acting = Acting()
    async with replica(memory, clock, acting, "a") as a:
        await until(lambda: acting.of("a") == set(SHARDS), clock)
        moving = sorted(s for s in SHARDS if owner_of(s, ["a", "b"]) == "b")
        gate = asyncio.Event()
        for shard in moving:
            acting.release_gate[shard] = gate
        async with replica(memory, clock, acting, "b") as b:
            # a stopped taking new work on the first moving shard, but has not finished it yet.
            await until(lambda: not a.owns(moving[0]), clock)
            for _ in range(20):
                await clock.advance(1)
                assert not b.owns(moving[0]) and acting.by_shard[moving[0]] == "a"
            gate.set()
            await until(settled(acting, "a", "b"), clock)
    assert not acting.overlaps


async def test_a_replica_that_loses_its_lease_stops_acting_then_rejoins(memory: MemoryStore,
                                                                          clock: FakeClock) -> None:
    acting = Acting()
    reports: list[str | None] = []
    async with replica(memory, clock, acting, "a", reports=reports) as a:
        await until(lambda: acting.of("a") == set(SHARDS), clock)
        assert reports == [None]
        lease = a.lease.id
        assert lease is not None
        await memory.revoke_lease(lease)  # as etcd ends a lease it was not told to keep
        await until(lambda: a.lease.id != lease and acting.of("a") == set(SHARDS), clock)
    assert not acting.overlaps
    # Its health said it held nothing, then that it was back.
    assert reports[-1] is None and any(r and "holds no shards" in r for r in reports), reports


async def test_a_lease_whose_validity_ran_out_while_a_refresh_was_out_is_lost(memory: MemoryStore,
                                                                             clock: FakeClock) -> None:
    """A replica that stopped acting for a moment (its keys not even queued) must not carry on as
    if it had not: the term ends, and the next takes every shard afresh."""
    lease = KeptLease(memory, clock, TTL)
    refresh = memory.refresh_lease

    slowed: list[int] = []

    async def slow(lease_id: int) -> int:
        remaining = await refresh(lease_id)
        if not slowed:
            slowed.append(lease_id)
            # The first answer comes after the validity (TTL less a margin from the grant) ran
            # out, early enough that the next refresh is within TTL of this one: etcd keeps it.
            await clock.advance(TTL * 0.62)
        return remaining

    setattr(memory, "refresh_lease", slow)  # noqa: B010
    await lease.grant()
    try:
        await until(lambda: lease.lost.is_set(), clock)
    finally:
        await lease.revoke()


class FailsOneDelete(MemoryStore):
    """etcd answering one claim's delete with an error (the delete is not done)."""

    failed = False

    async def kv_delete_if(self, key: str, mod_revision: int) -> bool:
        if "/claims/" in key and not self.failed:
            self.failed = True
            from flotilla.store.errors import Unavailable
            raise Unavailable("etcd went away for a moment")
        return await super().kv_delete_if(key, mod_revision)


async def test_a_claim_whose_delete_failed_is_let_go_on_the_next_pass(clock: FakeClock) -> None:
    store = FailsOneDelete(clock)
    acting = Acting()
    async with replica(store, clock, acting, "a"):
        await until(lambda: acting.of("a") == set(SHARDS), clock)
        async with replica(store, clock, acting, "b"):
            await until(settled(acting, "a", "b"), clock)
            assert store.failed
    assert not acting.overlaps
