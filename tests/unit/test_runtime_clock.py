import asyncio
from datetime import UTC, datetime, timedelta, timezone

import pytest

from flotilla.aio.clock import Clock, FakeClock, RealClock

pytestmark = pytest.mark.timeout(5)


async def test_real_clock_reads_utc_and_monotonic_time() -> None:
    clock: Clock = RealClock()
    assert clock.now().tzinfo is UTC
    before = clock.monotonic()
    await clock.sleep(0)
    await clock.sleep(-1)
    assert clock.monotonic() >= before


def test_fake_clock_starts_at_the_given_time_in_utc() -> None:
    cet = timezone(timedelta(hours=1))
    clock = FakeClock(datetime(2024, 5, 1, 13, 0, tzinfo=cet))
    assert clock.now() == datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    assert clock.now().tzinfo is UTC
    assert clock.monotonic() == 0.0
    assert FakeClock().now().tzinfo is UTC


def test_fake_clock_rejects_a_naive_start() -> None:
    with pytest.raises(ValueError):
        FakeClock(datetime(2024, 1, 1))


async def test_time_stands_still_until_advanced() -> None:
    clock = FakeClock()
    start = clock.now()
    await asyncio.sleep(0)
    assert clock.now() == start
    await clock.advance(300)
    assert clock.now() == start + timedelta(minutes=5)
    assert clock.monotonic() == 300.0


async def test_advance_refuses_to_go_backwards() -> None:
    with pytest.raises(ValueError):
        await FakeClock().advance(-1)


async def test_sleep_blocks_until_the_deadline_and_not_before() -> None:
    clock = FakeClock()
    sleeper = asyncio.create_task(clock.sleep(10))
    await clock.wait_for_sleepers(1)
    assert clock.next_deadline() == 10.0

    await clock.advance(9.999)
    assert not sleeper.done()
    await clock.advance(0.001)
    assert sleeper.done()
    assert clock.pending_sleepers() == 0
    assert clock.next_deadline() is None


async def test_sleep_zero_returns_without_advancing() -> None:
    clock = FakeClock()
    await asyncio.wait_for(clock.sleep(0), timeout=0.1)
    await asyncio.wait_for(clock.sleep(-5), timeout=0.1)
    assert clock.pending_sleepers() == 0


async def test_sleepers_wake_in_deadline_order_at_their_deadline() -> None:
    clock = FakeClock()
    woke: list[tuple[str, float]] = []

    async def sleeper(name: str, seconds: float) -> None:
        await clock.sleep(seconds)
        woke.append((name, clock.monotonic()))

    tasks = [asyncio.create_task(sleeper(name, s)) for name, s in [("c", 3), ("a", 1), ("b", 2)]]
    await clock.wait_for_sleepers(3)
    await clock.advance(10)
    assert woke == [("a", 1.0), ("b", 2.0), ("c", 3.0)]
    assert clock.monotonic() == 10.0
    await asyncio.gather(*tasks)


async def test_a_periodic_task_runs_once_per_period_within_one_advance() -> None:
    clock = FakeClock()
    ticks: list[float] = []

    async def every_second() -> None:
        while True:
            await clock.sleep(1)
            ticks.append(clock.monotonic())

    task = asyncio.create_task(every_second())
    await clock.advance(5.5)
    assert ticks == [1.0, 2.0, 3.0, 4.0, 5.0]
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_cancelled_sleepers_are_not_pending() -> None:
    clock = FakeClock()
    early = asyncio.create_task(clock.sleep(1))
    late = asyncio.create_task(clock.sleep(2))
    await clock.wait_for_sleepers(2)

    early.cancel()
    await asyncio.gather(early, return_exceptions=True)
    assert clock.pending_sleepers() == 1
    assert clock.next_deadline() == 2.0

    await clock.advance(2)
    assert late.done()


async def test_wait_for_sleepers_wakes_when_enough_tasks_sleep() -> None:
    clock = FakeClock()
    waiter = asyncio.create_task(clock.wait_for_sleepers(2))
    sleepers = [asyncio.create_task(clock.sleep(1))]
    await clock.advance(0)
    assert not waiter.done()

    sleepers.append(asyncio.create_task(clock.sleep(1)))
    await waiter
    await clock.advance(1)
    await asyncio.gather(*sleepers)
