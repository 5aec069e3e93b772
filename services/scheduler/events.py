"""Events about scheduling decisions, written in the background.

A failover reschedules many bindings at once; writing each decision's Events inline
would double the etcd writes on the path that decides how fast workloads move. Like
Kubernetes' event broadcaster behind a client rate limit, the sink queues events, writes
them at a bounded rate, and drops them (counting and logging the loss) rather than slow
scheduling down when it falls behind.
"""

from __future__ import annotations

import asyncio
import logging

from google.protobuf.message import Message

from flotilla.runtime.clock import Clock
from flotilla.runtime.tasks import cancel_and_wait
from flotilla.store.events import EventRecorder

log = logging.getLogger(__name__)


class EventSink:
    def __init__(self, recorder: EventRecorder, clock: Clock, qps: float = 50.0, capacity: int = 1000,
                 workers: int = 2) -> None:
        self.recorder = recorder
        self.clock = clock
        self.dropped = 0
        self._queue: asyncio.Queue[tuple[Message, str, str, str]] = asyncio.Queue(capacity)
        self._workers = workers
        self._interval = 1.0 / qps if qps > 0 else 0.0
        # Token bucket as a schedule: the earliest time the next write may start.
        self._burst = max(qps * 2, 1.0) * self._interval
        self._next = clock.monotonic()

    def emit(self, obj: Message, event_type: str, reason: str, message: str) -> None:
        try:
            self._queue.put_nowait((obj, event_type, reason, message))
        except asyncio.QueueFull:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.warning("event=events-dropped count=%d reason=%s", self.dropped, reason)

    async def run(self) -> None:
        """Write queued events until cancelled."""
        workers = [asyncio.create_task(self._work()) for _ in range(self._workers)]
        try:
            await asyncio.gather(*workers)
        finally:
            await cancel_and_wait(*workers)

    async def _work(self) -> None:
        while True:
            obj, event_type, reason, message = await self._queue.get()
            try:
                await self._take_turn()
                await self.recorder.record(obj, event_type, reason, message)
            finally:
                self._queue.task_done()

    async def _take_turn(self) -> None:
        now = self.clock.monotonic()
        start = max(self._next, now - self._burst)
        self._next = start + self._interval
        if start > now:
            await self.clock.sleep(start - now)
