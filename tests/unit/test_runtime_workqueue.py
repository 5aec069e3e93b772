import asyncio

import pytest

from flotilla.aio.clock import FakeClock, RealClock
from flotilla.runtime.workqueue import QueueShutDown, WorkQueue

pytestmark = pytest.mark.timeout(5)

EPS = 0.001


async def assert_blocks(queue: WorkQueue) -> None:
    """`get()` has nothing to hand out: it is still waiting after the loop has settled."""
    getter = asyncio.create_task(queue.get())
    for _ in range(10):
        await asyncio.sleep(0)
    assert not getter.done()
    getter.cancel()
    await asyncio.gather(getter, return_exceptions=True)


async def test_adding_a_queued_key_again_is_one_unit_of_work() -> None:
    queue = WorkQueue(FakeClock())
    for _ in range(3):
        queue.add("default/nginx")
    assert len(queue) == 1
    assert await queue.get() == "default/nginx"
    assert len(queue) == 0
    await assert_blocks(queue)


async def test_keys_come_out_in_the_order_they_went_in() -> None:
    queue = WorkQueue(FakeClock())
    for key in ["a", "b", "a", "c"]:
        queue.add(key)
    assert [await queue.get() for _ in range(3)] == ["a", "b", "c"]


async def test_a_waiting_get_is_woken_by_add() -> None:
    queue = WorkQueue(FakeClock())
    getter = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.add("a")
    assert await getter == "a"


async def test_a_key_added_while_processing_is_redelivered_once_after_done() -> None:
    queue = WorkQueue(FakeClock())
    queue.add("a")
    assert await queue.get() == "a"

    queue.add("a")
    queue.add("a")
    assert len(queue) == 0  # held back: another worker must not get it while "a" is in flight
    await assert_blocks(queue)

    queue.done("a")
    assert len(queue) == 1
    assert await queue.get() == "a"
    queue.done("a")
    assert len(queue) == 0


async def test_done_without_a_new_add_does_not_requeue() -> None:
    queue = WorkQueue(FakeClock())
    queue.add("a")
    queue.done(await queue.get())
    assert len(queue) == 0


async def test_a_cancelled_getter_passes_its_wakeup_on() -> None:
    queue = WorkQueue(FakeClock())
    first = asyncio.create_task(queue.get())
    second = asyncio.create_task(queue.get())
    await asyncio.sleep(0)

    queue.add("a")  # wakes `first`, which is cancelled before it can take the key
    first.cancel()
    assert await second == "a"
    await asyncio.gather(first, return_exceptions=True)


async def test_shutdown_wakes_waiting_getters_and_stops_handing_out_keys() -> None:
    queue = WorkQueue(FakeClock())
    getters = [asyncio.create_task(queue.get()) for _ in range(3)]
    await asyncio.sleep(0)
    queue.shutdown()
    results = await asyncio.gather(*getters, return_exceptions=True)
    assert all(isinstance(r, QueueShutDown) for r in results)

    queue.add("a")
    with pytest.raises(QueueShutDown):
        await queue.get()


async def test_shutdown_drops_keys_that_are_still_queued() -> None:
    queue = WorkQueue(FakeClock())
    queue.add("a")
    queue.shutdown()
    with pytest.raises(QueueShutDown):
        await queue.get()


async def test_add_after_fires_exactly_at_the_deadline() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock)
    queue.add_after("a", 2.5)

    await clock.advance(2.5 - EPS)
    assert len(queue) == 0
    await clock.advance(EPS)
    assert len(queue) == 1
    assert await queue.get() == "a"
    await queue.aclose()


async def test_add_after_without_a_delay_adds_now() -> None:
    queue = WorkQueue(FakeClock())
    queue.add_after("a", 0)
    queue.add_after("b", -1)
    assert len(queue) == 2


async def test_an_earlier_deadline_for_the_same_key_wins() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock)
    queue.add_after("a", 10)
    await clock.wait_for_sleepers(1)
    queue.add_after("a", 2)  # must wake the timer, which is sleeping until t=10

    await clock.advance(2 - EPS)
    assert len(queue) == 0
    await clock.advance(EPS)
    assert await queue.get() == "a"
    queue.done("a")

    await clock.advance(10)  # the superseded deadline delivers nothing
    assert len(queue) == 0
    await queue.aclose()


async def test_a_later_deadline_does_not_postpone_an_earlier_one() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock)
    queue.add_after("a", 2)
    queue.add_after("a", 10)

    await clock.advance(2)
    assert await queue.get() == "a"
    queue.done("a")
    await clock.advance(10)
    assert len(queue) == 0
    await queue.aclose()


async def test_delayed_keys_are_released_in_deadline_order() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock)
    for key, delay in [("c", 3), ("a", 1), ("b", 2)]:
        queue.add_after(key, delay)
    await clock.advance(3)
    assert [await queue.get() for _ in range(3)] == ["a", "b", "c"]
    await queue.aclose()


async def test_one_timer_sleeps_on_the_clock_until_the_earliest_deadline() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock)
    for i in range(5):
        queue.add_after(f"k{i}", 60 + i)
    await clock.wait_for_sleepers(1)
    assert clock.pending_sleepers() == 1
    assert clock.next_deadline() == 60.0
    await queue.aclose()


async def test_a_finished_sleep_counts_as_reaching_the_deadline() -> None:
    class EarlyWakingClock(FakeClock):
        """Like an event loop that fires timers within its clock resolution."""

        async def sleep(self, seconds: float) -> None:
            await super().sleep(seconds - 1e-6)

    clock = EarlyWakingClock()
    queue = WorkQueue(clock)
    queue.add_after("a", 1)
    await clock.advance(1 - 1e-6)
    assert len(queue) == 1
    assert clock.pending_sleepers() == 0  # no extra sleep for the last microsecond
    await queue.aclose()


async def test_add_after_works_on_the_real_clock() -> None:
    queue = WorkQueue(RealClock())
    queue.add_after("a", 0.002)
    assert len(queue) == 0
    async with asyncio.timeout(1):
        assert await queue.get() == "a"
    await queue.aclose()


async def test_rate_limited_backoff_doubles_caps_and_resets_on_forget() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock, base_backoff=1, max_backoff=8)

    async def expect_delivery_after(delay: float) -> None:
        queue.add_rate_limited("a")
        await clock.advance(delay - EPS)
        assert len(queue) == 0, f"delivered before {delay}s"
        await clock.advance(EPS)
        assert await queue.get() == "a"
        queue.done("a")

    for failures, delay in enumerate([1, 2, 4, 8, 8]):
        assert queue.num_requeues("a") == failures
        await expect_delivery_after(delay)
    assert queue.num_requeues("a") == 5

    queue.forget("a")
    assert queue.num_requeues("a") == 0
    await expect_delivery_after(1)
    await queue.aclose()


async def test_backoff_is_per_key() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock, base_backoff=1, max_backoff=8)
    for delay in [1, 2]:
        queue.add_rate_limited("slow")
        await clock.advance(delay)
        queue.done(await queue.get())

    queue.add_rate_limited("slow")  # third failure: 4s
    queue.add_rate_limited("fresh")  # first failure: 1s
    assert (queue.num_requeues("slow"), queue.num_requeues("fresh")) == (3, 1)
    await clock.advance(1)
    assert len(queue) == 1
    assert await queue.get() == "fresh"
    await clock.advance(3)
    assert await queue.get() == "slow"
    await queue.aclose()


async def test_backoff_survives_very_many_failures() -> None:
    queue = WorkQueue(FakeClock(), base_backoff=0.005, max_backoff=300)
    for _ in range(5000):
        queue.add_rate_limited("a")
    assert queue.num_requeues("a") == 5000
    await queue.aclose()


async def test_aclose_leaves_no_tasks_behind() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock)
    queue.add_after("a", 30)
    await clock.wait_for_sleepers(1)

    await queue.aclose()
    await asyncio.sleep(0)
    assert asyncio.all_tasks() == {asyncio.current_task()}
    assert clock.pending_sleepers() == 0
    queue.add_after("b", 1)  # ignored once shut down, and starts no new timer
    assert asyncio.all_tasks() == {asyncio.current_task()}


# -- priority (the scheduler's queue: highest schedulePriority first, FIFO within one) -------


@pytest.mark.parametrize(("adds", "expected"), [
    pytest.param([("a", 0), ("b", 0), ("c", 0)], ["a", "b", "c"], id="one-priority-is-fifo"),
    pytest.param([("batch", 0), ("critical", 1000)], ["critical", "batch"], id="higher-first"),
    pytest.param([("low1", -5), ("mid1", 10), ("high1", 100), ("mid2", 10), ("low2", -5), ("high2", 100)],
                 ["high1", "high2", "mid1", "mid2", "low1", "low2"], id="fifo-within-each-priority"),
    pytest.param([("x", 2_000_000_000), ("y", -2_147_483_648), ("z", 0)], ["x", "z", "y"],
                 id="int32-extremes"),
])
async def test_ready_keys_come_out_highest_priority_first(adds: list[tuple[str, int]], expected: list[str]) -> None:
    priorities = dict(adds)
    queue = WorkQueue(FakeClock(), priority=priorities.__getitem__)
    for key, _ in adds:
        queue.add(key)
    assert len(queue) == len(expected)
    assert [await queue.get() for _ in expected] == expected


async def test_a_queued_key_whose_priority_rose_moves_up_once() -> None:
    priorities = {"a": 0, "b": 0, "c": 0}
    queue = WorkQueue(FakeClock(), priority=priorities.__getitem__)
    for key in "abc":
        queue.add(key)
    priorities["c"] = 10
    queue.add("c")
    priorities["a"] = -10  # a lower priority does not push a queued key back
    queue.add("a")
    assert len(queue) == 3
    assert [await queue.get() for _ in range(3)] == ["c", "a", "b"]
    await assert_blocks(queue)


async def test_priority_is_read_when_a_key_becomes_ready_again() -> None:
    priorities = {"a": 0, "b": 5}
    queue = WorkQueue(FakeClock(), priority=priorities.__getitem__)
    queue.add("a")
    assert await queue.get() == "a"
    queue.add("a")  # while processing: held back
    queue.add("b")
    priorities["a"] = 50
    queue.done("a")  # re-queued with the priority it has now
    assert [await queue.get() for _ in range(2)] == ["a", "b"]


async def test_a_delayed_key_is_released_into_its_priority() -> None:
    clock = FakeClock()
    priorities = {"late-critical": 100, "batch1": 0, "batch2": 0}
    queue = WorkQueue(clock, priority=priorities.__getitem__)
    queue.add_after("late-critical", 1.0)
    queue.add("batch1")
    queue.add("batch2")
    await clock.advance(1.0 + EPS)
    for _ in range(10):
        await asyncio.sleep(0)
    assert [await queue.get() for _ in range(3)] == ["late-critical", "batch1", "batch2"]
    await queue.aclose()


async def test_a_prioritised_key_is_never_held_twice_and_shutdown_still_stops_it() -> None:
    queue = WorkQueue(FakeClock(), priority=lambda key: 1 if key == "hi" else 0)
    queue.add("lo")
    queue.add("hi")
    assert await queue.get() == "hi"
    queue.add("hi")
    assert await queue.get() == "lo"
    await assert_blocks(queue)  # "hi" is in flight: not handed out again
    queue.shutdown()
    queue.done("hi")
    with pytest.raises(QueueShutDown):
        await queue.get()
