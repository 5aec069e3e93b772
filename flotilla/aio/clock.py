"""Time as a dependency.

Everything timing-dependent in Flotilla (thresholds, toleration seconds, backoff, requeue delays)
takes a `Clock`, so production code runs on `RealClock` and a unit test of a five-minute timeout
runs on `FakeClock` in milliseconds.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol

__all__ = ["Clock", "FakeClock", "RealClock"]


class Clock(Protocol):
    def now(self) -> datetime:
        """Wall-clock time, timezone-aware UTC (for timestamps written into objects)."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (for measuring intervals and deadlines)."""
        ...

    async def sleep(self, seconds: float) -> None: ...


class RealClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(seconds, 0.0))


# How often `FakeClock` yields to the event loop after waking a sleeper. A woken task usually
# hands work on to others (timer -> queue -> worker -> reconciler), one loop iteration per hop;
# asyncio has no public "all tasks are blocked" test, so a generous fixed count stands in for it.
_SETTLE_YIELDS = 20

_NS_PER_S = 1_000_000_000
_DEFAULT_START = datetime(2024, 1, 1, tzinfo=UTC)


def _to_ns(seconds: float) -> int:
    return round(seconds * _NS_PER_S)


class FakeClock:
    """A clock that stands still until a test calls `await advance(seconds)`.

    Time is kept in integer nanoseconds so that advancing by `d - eps` and then `eps` lands
    exactly on `d`; float sums would drift by an ulp and make "not before the deadline" tests
    flaky. `monotonic()` starts at 0.0.
    """

    def __init__(self, start: datetime | None = None) -> None:
        if start is None:
            start = _DEFAULT_START
        if start.tzinfo is None:
            raise ValueError("FakeClock start must be timezone-aware")
        self._start = start.astimezone(UTC)
        self._ns = 0
        # (deadline_ns, seq, future); seq keeps wake order stable for equal deadlines. Cancelled
        # sleepers stay in the heap until they surface, and are skipped then.
        self._sleepers: list[tuple[int, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()
        self._sleeper_watchers: list[tuple[int, asyncio.Future[None]]] = []

    def now(self) -> datetime:
        return self._start + timedelta(microseconds=self._ns // 1000)

    def monotonic(self) -> float:
        return self._ns / _NS_PER_S

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        # At least one tick, so a positive sleep never completes without an advance.
        deadline = self._ns + max(1, _to_ns(seconds))
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (deadline, next(self._seq), future))
        self._notify_watchers()
        await future

    async def advance(self, seconds: float) -> None:
        """Move time forward, waking sleepers one by one in deadline order.

        Time is set to each sleeper's deadline before it wakes, and the loop runs until things
        settle, so a task that goes back to sleep within the window (a periodic loop) wakes
        again in the same call, exactly as it would in real time. `advance(0)` just lets every
        runnable task run.
        """
        if seconds < 0:
            raise ValueError("cannot move time backwards")
        target = self._ns + _to_ns(seconds)
        await _settle()
        while (deadline := self._next_deadline_ns()) is not None and deadline <= target:
            _, _, future = heapq.heappop(self._sleepers)
            self._ns = deadline
            future.set_result(None)
            await _settle()
        self._ns = target
        await _settle()

    def pending_sleepers(self) -> int:
        return sum(1 for _, _, future in self._sleepers if not future.done())

    def next_deadline(self) -> float | None:
        """The earliest pending sleeper's deadline, on the `monotonic()` scale."""
        deadline = self._next_deadline_ns()
        return None if deadline is None else deadline / _NS_PER_S

    async def wait_for_sleepers(self, count: int = 1) -> None:
        """Wait until at least `count` tasks sleep on this clock (bound it with `asyncio.timeout`)."""
        if self.pending_sleepers() >= count:
            return
        watcher: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (count, watcher)
        self._sleeper_watchers.append(entry)
        try:
            await watcher
        finally:
            self._sleeper_watchers.remove(entry)

    def _next_deadline_ns(self) -> int | None:
        while self._sleepers and self._sleepers[0][2].done():
            heapq.heappop(self._sleepers)
        return self._sleepers[0][0] if self._sleepers else None

    def _notify_watchers(self) -> None:
        if not self._sleeper_watchers:
            return
        pending = self.pending_sleepers()
        for count, watcher in self._sleeper_watchers:
            if pending >= count and not watcher.done():
                watcher.set_result(None)


async def _settle() -> None:
    for _ in range(_SETTLE_YIELDS):
        await asyncio.sleep(0)
