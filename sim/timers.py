"""One task runs every timed event of every simulated cluster (a pod becoming Ready, a Job's
pod completing): it sleeps on the Clock until the earliest deadline, so a hundred idle clusters
cost nothing and a FakeClock test sees events exactly at their deadline."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
from collections.abc import Callable

from flotilla.aio.clock import Clock
from flotilla.aio.tasks import cancel_and_wait
from sim.waiting import wait_first

log = logging.getLogger(__name__)

# Deadlines are floats on Clock.monotonic(); a wake-up computed as now + (deadline - now) can
# land a rounding error short of the deadline.
_EPSILON = 1e-6
# Due events fired before the loop serves anything else; each settles its cluster.
_SLICE = 16


class Timer:
    __slots__ = ("callback", "cancelled", "when")

    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Timers:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._heap: list[tuple[float, int, Timer]] = []
        self._seq = itertools.count()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        timer = Timer(self.clock.monotonic() + max(delay, 0.0), callback)
        earliest = self._earliest()
        heapq.heappush(self._heap, (timer.when, next(self._seq), timer))
        if earliest is None or timer.when < earliest:
            self._wake.set()
        return timer

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="sim-timers")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)

    def _earliest(self) -> float | None:
        while self._heap and self._heap[0][2].cancelled:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    def _fire_due(self) -> bool:
        """Fires up to `_SLICE` due events; True when more are due."""
        now = self.clock.monotonic() + _EPSILON
        for _ in range(_SLICE):
            earliest = self._earliest()
            if earliest is None or earliest > now:
                return False
            _, _, timer = heapq.heappop(self._heap)
            try:
                timer.callback()
            except Exception:  # one broken event must not stop every cluster's clock
                log.exception("event=sim-timer-failed")
        earliest = self._earliest()
        return earliest is not None and earliest <= now

    async def _run(self) -> None:
        while True:
            self._wake.clear()
            while True:
                if not self._fire_due():
                    break
                # Thousands of pods turning Ready at once would otherwise hold the loop, and every
                # request (a health probe too) waits behind them.
                await asyncio.sleep(0)
            earliest = self._earliest()
            if earliest is None:
                await self._wake.wait()
            else:
                await wait_first(self._wake.wait(), self.clock.sleep(earliest - self.clock.monotonic()))
