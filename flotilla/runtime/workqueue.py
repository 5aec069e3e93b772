"""A rate-limited, delaying work queue with client-go's semantics, for asyncio.

Keys are object keys; a reconciler reads current state for a key, so the queue only has to
guarantee that a key added is processed at least once afterwards, and never by two workers
at once. Adding a key many times before it is taken is one unit of work.

Ready keys are handed out highest priority first, in the order they became ready within a
priority (Karmada's scheduling queue: in a failover storm a critical binding's reschedule must
not wait behind hundreds of batch ones). A queue built without a `priority` function gives
every key priority 0, which is plain FIFO: every controller but the scheduler's.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections import deque
from collections.abc import Callable

from flotilla.aio.clock import Clock
from flotilla.runtime import metrics

__all__ = ["QueueShutDown", "WorkQueue"]

# base * 2**n with n capped: every sane base has reached max_backoff long before 2**64, and the
# cap keeps the float arithmetic finite however many times a key fails.
_MAX_BACKOFF_EXPONENT = 64


class QueueShutDown(Exception):
    """Raised by `WorkQueue.get` once the queue is shut down."""


class WorkQueue:
    """De-duplicating work queue with delayed and rate-limited adds.

    After `shutdown()`, `get()` raises `QueueShutDown` at once, even if keys are still queued:
    a stopping controller (shutdown, lost leadership) must stop reconciling, and because
    reconcilers are level-triggered, whoever runs next relists and loses nothing.

    Delayed keys are released by a single timer task, started on the first delayed add. Call
    `aclose()` (or `shutdown()` and let the loop run) so that it exits.

    `priority(key)` is asked whenever a key becomes ready (added, released after a delay or a
    backoff, re-queued by `done`), and again when a ready key is added anew, so a key whose
    priority rose since it was queued moves up (it never moves down: the earlier, higher claim
    stays until it is taken).
    """

    def __init__(
        self, clock: Clock, name: str = "", base_backoff: float = 0.005, max_backoff: float = 300.0,
        priority: Callable[[str], int] | None = None,
    ) -> None:
        self.name = name
        self._clock = clock
        self._base_backoff = base_backoff
        self._max_backoff = max_backoff
        self._priority = priority

        # Ready keys: a heap of (-priority, sequence, key), and each ready key's entry in it as
        # (priority, sequence). The heap may hold superseded entries (a key moved up); an entry
        # counts only while it matches _ready.
        self._queue: list[tuple[int, int, str]] = []
        self._ready: dict[str, tuple[int, int]] = {}
        self._ready_seq = itertools.count()
        # Keys that need processing: the ready ones, plus keys added while being processed,
        # which become ready again on done().
        self._dirty: set[str] = set()
        self._processing: set[str] = set()
        # Set whenever a key is done: what `drained` waits on.
        self._one_done = asyncio.Event()
        self._getters: deque[asyncio.Future[None]] = deque()
        self._shutting_down = False

        # Delayed adds: key -> earliest deadline (clock.monotonic() scale). The heap may hold
        # superseded entries; an entry counts only while it matches _waiting.
        self._waiting: dict[str, float] = {}
        self._waiting_heap: list[tuple[float, int, str]] = []
        self._seq = itertools.count()
        self._timer: asyncio.Task[None] | None = None
        self._timer_wakeup: asyncio.Future[None] | None = None
        self._timer_deadline: float | None = None

        self._failures: dict[str, int] = {}

        # Metrics (client-go's workqueue names): when each queued key was added, when each key
        # being processed was taken, and when the key it holds was added.
        self._added_at: dict[str, float] = {}
        self._taken_at: dict[str, tuple[float, float]] = {}
        self._depth = metrics.WORKQUEUE_DEPTH.labels(name)
        self._adds = metrics.WORKQUEUE_ADDS.labels(name)
        self._queue_duration = metrics.WORKQUEUE_QUEUE_DURATION.labels(name)
        self._work_duration = metrics.WORKQUEUE_WORK_DURATION.labels(name)
        self._retries = metrics.WORKQUEUE_RETRIES.labels(name)
        # Called with the depth whenever it changes (an eviction queue also reports it as such).
        self.depth_observers: list[Callable[[int], None]] = []

    def __len__(self) -> int:
        """Keys ready to be taken (not delayed ones, not ones being processed)."""
        return len(self._ready)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def add(self, key: str) -> None:
        if self._shutting_down:
            return
        if key in self._dirty:
            if key in self._ready and self._priority is not None:
                priority = self._priority(key)
                if priority > self._ready[key][0]:
                    self._push(key, priority)
            return
        self._dirty.add(key)
        self._adds.inc()
        self._added_at.setdefault(key, time.perf_counter())
        if key in self._processing:
            return  # done() re-queues it, so no two workers ever hold the same key
        self._make_ready(key)

    def add_after(self, key: str, delay: float) -> None:
        """Add `key` once `delay` seconds have passed; an earlier pending deadline wins."""
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(key)
            return
        deadline = self._clock.monotonic() + delay
        current = self._waiting.get(key)
        if current is not None and current <= deadline:
            return
        self._waiting[key] = deadline
        heapq.heappush(self._waiting_heap, (deadline, next(self._seq), key))
        if self._timer is None:
            self._timer = asyncio.get_running_loop().create_task(
                self._run_timer(), name=f"workqueue-timer-{self.name}"
            )
        elif self._timer_deadline is None or deadline < self._timer_deadline:
            self._wake_timer()

    def add_rate_limited(self, key: str) -> None:
        """Add `key` after its per-key exponential backoff, and count the failure."""
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        self._retries.inc()
        self.add_after(key, self._backoff(failures))

    def forget(self, key: str) -> None:
        """Reset `key`'s backoff; call it when the key was processed successfully."""
        self._failures.pop(key, None)

    def num_requeues(self, key: str) -> int:
        return self._failures.get(key, 0)

    async def get(self) -> str:
        """Wait for a key and mark it as being processed; the caller must call `done(key)`."""
        while True:
            if self._shutting_down:
                raise QueueShutDown(self.name)
            if self._ready:
                break
            getter = asyncio.get_running_loop().create_future()
            self._getters.append(getter)
            try:
                await getter
            except asyncio.CancelledError:
                getter.cancel()
                if getter in self._getters:
                    self._getters.remove(getter)
                # We were woken for a key but cancelled before taking it: pass the wakeup on.
                if not getter.cancelled() and self._ready:
                    self._wake_getter()
                raise
        key = self._pop()
        self._dirty.discard(key)
        self._processing.add(key)
        now = time.perf_counter()
        added = self._added_at.pop(key, now)
        self._queue_duration.observe(now - added)
        self._taken_at[key] = (now, added)
        self._observe_depth()
        return key

    def enqueued_at(self, key: str) -> float | None:
        """When (`time.perf_counter()`) the key being processed was added, or None."""
        taken = self._taken_at.get(key)
        return taken[1] if taken is not None else None

    async def drained(self, match: Callable[[str], bool]) -> None:
        """Return once no key in flight matches (keys added meanwhile count too)."""
        while any(match(key) for key in self._processing):
            self._one_done.clear()
            await self._one_done.wait()

    def done(self, key: str) -> None:
        self._processing.discard(key)
        self._one_done.set()
        taken = self._taken_at.pop(key, None)
        if taken is not None:
            self._work_duration.observe(time.perf_counter() - taken[0])
        if key in self._dirty and not self._shutting_down:
            self._make_ready(key)

    def shutdown(self) -> None:
        """Stop handing out keys; pending and future `get()` calls raise `QueueShutDown`."""
        self._shutting_down = True
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(None)
        self._wake_timer()

    async def aclose(self) -> None:
        """Shut down and wait for the timer task to exit."""
        self.shutdown()
        if self._timer is not None:
            await self._timer

    def _backoff(self, failures: int) -> float:
        return min(self._base_backoff * 2.0 ** min(failures, _MAX_BACKOFF_EXPONENT), self._max_backoff)

    def _make_ready(self, key: str) -> None:
        self._push(key, self._priority(key) if self._priority is not None else 0)
        self._observe_depth()
        self._wake_getter()

    def _push(self, key: str, priority: int) -> None:
        seq = next(self._ready_seq)
        self._ready[key] = (priority, seq)
        heapq.heappush(self._queue, (-priority, seq, key))

    def _pop(self) -> str:
        """The ready key of the highest priority, the earliest ready among equals."""
        while True:
            negated, seq, key = heapq.heappop(self._queue)
            if self._ready.get(key) == (-negated, seq):
                del self._ready[key]
                return key

    def _observe_depth(self) -> None:
        depth = len(self._ready)
        self._depth.set(depth)
        for observe in self.depth_observers:
            observe(depth)

    def _wake_getter(self) -> None:
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(None)
                return

    def _wake_timer(self) -> None:
        if self._timer_wakeup is not None and not self._timer_wakeup.done():
            self._timer_wakeup.set_result(None)

    def _next_deadline(self) -> float | None:
        heap = self._waiting_heap
        while heap and self._waiting.get(heap[0][2]) != heap[0][0]:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def _release_due(self, now: float) -> None:
        while (deadline := self._next_deadline()) is not None and deadline <= now:
            _, _, key = heapq.heappop(self._waiting_heap)
            del self._waiting[key]
            self.add(key)

    async def _run_timer(self) -> None:
        loop = asyncio.get_running_loop()
        slept_until: float | None = None
        while not self._shutting_down:
            now = self._clock.monotonic()
            # A completed sleep means its deadline has passed, even if the clock reads a hair
            # earlier (float rounding, or an event loop that fires timers slightly early);
            # without this the timer would go back to sleep for a few nanoseconds.
            self._release_due(now if slept_until is None else max(now, slept_until))
            self._timer_wakeup = loop.create_future()
            self._timer_deadline = deadline = self._next_deadline()
            if deadline is None:
                await self._timer_wakeup
                slept_until = None
                continue
            sleep = loop.create_task(self._clock.sleep(deadline - now))
            try:
                await asyncio.wait({sleep, self._timer_wakeup}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                if not sleep.done():
                    sleep.cancel()
                    # Let it unwind, so no task outlives the timer.
                    await asyncio.wait({sleep})
            slept_until = deadline if not sleep.cancelled() else None
        self._timer_deadline = None
