"""A lease kept alive in the background (flotilla.store.lease), and the leader elector that holds
its key on one: validity counts from when a refresh was sent, and a refresh that failed is
tried again while the validity lasts rather than after a whole refresh interval."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from flotilla.aio.clock import FakeClock
from flotilla.store.errors import Unavailable
from flotilla.store.leader import LeaderElector
from flotilla.store.lease import KeptLease
from flotilla.store.memory import MemoryStore

TTL = 9  # refreshed every 3 s; valid 8.1 s (a margin of 0.9 s) from when a refresh was sent
DEADLINE = 30.0


def refreshes(memory: MemoryStore, answer: Callable[[int, int], Awaitable[int]]) -> list[int]:
    """Every refresh of the store's leases goes through `answer(n, lease)` (n counts from 0)."""
    calls: list[int] = []

    async def refresh(lease: int) -> int:
        calls.append(lease)
        return await answer(len(calls) - 1, lease)

    setattr(memory, "refresh_lease", refresh)  # noqa: B010
    return calls


async def settle_for(clock: FakeClock, seconds: float, step: float = 0.1) -> None:
    for _ in range(round(seconds / step)):
        await clock.advance(step)


def first_refresh_times_out(memory: MemoryStore, clock: FakeClock) -> list[int]:
    """The first refresh goes unanswered for a whole refresh interval (etcd catching up on a
    loaded machine); the others are answered at once."""
    refresh = memory.refresh_lease

    async def answer(n: int, lease: int) -> int:
        if n == 0:
            await clock.advance(TTL / 3)
            raise TimeoutError
        return await refresh(lease)

    return refreshes(memory, answer)


async def test_a_refresh_that_timed_out_is_tried_again_at_once_and_the_lease_is_kept(
        memory: MemoryStore, clock: FakeClock) -> None:
    calls = first_refresh_times_out(memory, clock)
    lease = KeptLease(memory, clock, TTL)
    await lease.grant()
    try:
        await settle_for(clock, 3 * TTL)
        assert len(calls) > 3
        assert lease.valid() and not lease.lost.is_set()
    finally:
        await lease.revoke()


async def test_refreshes_that_keep_failing_end_the_lease_before_etcd_could(memory: MemoryStore,
                                                                          clock: FakeClock) -> None:
    async def answer(_n: int, _lease: int) -> int:
        raise Unavailable("etcd is away")

    calls = refreshes(memory, answer)
    lease = KeptLease(memory, clock, TTL)
    await lease.grant()
    try:
        await settle_for(clock, TTL * 0.95)
        assert lease.lost.is_set() and not lease.valid()
        # Tried many times in the validity, not once per refresh interval.
        assert len(calls) >= 10
    finally:
        await lease.revoke()


async def test_a_lease_refreshed_late_counts_from_when_the_refresh_was_sent(memory: MemoryStore,
                                                                            clock: FakeClock) -> None:
    refresh = memory.refresh_lease
    sent: list[float] = []

    async def answer(n: int, lease: int) -> int:
        sent.append(clock.monotonic())
        remaining = await refresh(lease)
        if n == 0:
            await clock.advance(2.0)  # answered 2 s after it was sent
        return remaining

    refreshes(memory, answer)
    lease = KeptLease(memory, clock, TTL)
    await lease.grant()
    try:
        await settle_for(clock, TTL / 3 + 2.5)
        assert lease.valid()
        assert lease._valid_until == pytest.approx(sent[0] + TTL - 0.9)
    finally:
        await lease.revoke()


async def test_a_leader_whose_refresh_timed_out_once_stays_leader(memory: MemoryStore, clock: FakeClock) -> None:
    first_refresh_times_out(memory, clock)
    elector = LeaderElector(memory, "svc", "first", TTL, clock=clock)
    await elector.campaign()
    try:
        await settle_for(clock, 3 * TTL)
        assert elector.is_leader and not elector.lost.is_set()
    finally:
        await elector.resign()


async def test_a_leader_stops_leading_once_its_lease_may_have_expired(memory: MemoryStore, clock: FakeClock) -> None:
    async def answer(_n: int, _lease: int) -> int:
        raise Unavailable("etcd is away")

    refreshes(memory, answer)
    elector = LeaderElector(memory, "svc", "first", TTL, clock=clock)
    await elector.campaign()
    try:
        assert elector.is_leader
        await settle_for(clock, TTL * 0.95)
        async with asyncio.timeout(DEADLINE):
            await elector.lost.wait()
        assert not elector.is_leader
    finally:
        await elector.resign()
