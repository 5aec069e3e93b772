"""The one timer task behind every simulated cluster: deadlines on the Clock, in order."""

import pytest

from flotilla.aio.clock import FakeClock
from sim.timers import Timers

pytestmark = pytest.mark.timeout(5)


async def test_timers_fire_at_their_deadlines_in_order_and_can_be_cancelled() -> None:
    clock = FakeClock()
    timers = Timers(clock)
    fired: list[tuple[str, float]] = []
    timers.start()
    try:
        timers.call_later(5, lambda: fired.append(("late", clock.monotonic())))
        await clock.advance(1)
        # An earlier deadline added while the task sleeps towards a later one wakes it.
        timers.call_later(1, lambda: fired.append(("early", clock.monotonic())))
        timers.call_later(2, lambda: fired.append(("cancelled", clock.monotonic()))).cancel()
        await clock.advance(0.999)
        assert fired == []
        await clock.advance(0.001)
        assert fired == [("early", 2.0)]
        await clock.advance(10)
        assert fired == [("early", 2.0), ("late", 5.0)]
    finally:
        await timers.stop()


async def test_a_failing_callback_does_not_stop_the_others() -> None:
    clock = FakeClock()
    timers = Timers(clock)
    fired: list[int] = []
    timers.start()
    try:
        timers.call_later(1, lambda: 1 / 0)
        timers.call_later(1, lambda: fired.append(1))
        await clock.advance(1)
        assert fired == [1]
    finally:
        await timers.stop()
