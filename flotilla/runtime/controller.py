"""The reconcile loop: workers take keys from a `WorkQueue` and hand them to a `Reconciler`.

Reconcilers are level-triggered: the key is the only input, the reconciler reads current state,
and running it again is always safe. So a failure is simply retried with backoff, and a
reconciler that needs to look again later returns a delay instead of sleeping.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from flotilla.runtime import metrics
from flotilla.runtime.workqueue import QueueShutDown, WorkQueue

__all__ = ["Controller", "Reconciler", "Result"]


@dataclass(frozen=True)
class Result:
    requeue_after: float | None = None


class Reconciler(Protocol):
    async def reconcile(self, key: str) -> Result | None: ...


class Controller:
    def __init__(
        self,
        name: str,
        reconciler: Reconciler,
        queue: WorkQueue,
        workers: int = 1,
        logger: logging.Logger | None = None,
        eviction: bool = False,
    ) -> None:
        if workers < 1:
            raise ValueError("a controller needs at least one worker")
        self.name = name
        self.queue = queue
        self._reconciler = reconciler
        # A reconciler that acts on only some keys (this replica's share, flotilla.runtime.sharing)
        # may say which with `admits(key)`: the others are not queued at all. It still checks
        # at reconcile time, where the key's ownership is decided.
        admits = getattr(reconciler, "admits", None)
        self._admits: Callable[[str], bool] | None = admits if callable(admits) else None
        self._workers = workers
        self._log = logger or logging.getLogger(__name__)
        self._running = False
        self._finished = asyncio.Event()
        # An eviction queue also reports Karmada's eviction_* metrics, labelled with its name.
        self.eviction = eviction
        self._eviction_latency = metrics.Children(metrics.EVICTION_PROCESSING_LATENCY)
        self._eviction_results = metrics.Children(metrics.EVICTION_PROCESSING_TOTAL)
        if eviction:
            depth = metrics.EVICTION_QUEUE_DEPTH.labels(name)
            queue.depth_observers.append(depth.set)

    def enqueue(self, key: str) -> None:
        if self._admits is not None and not self._admits(key):
            return
        self.queue.add(key)

    async def run(self) -> None:
        """Run the workers until `stop()`; cancelling `run()` cancels them.

        Run again after it ended (a supervisor restarting it), it continues with the same queue.
        """
        if self._running:
            raise RuntimeError(f"controller {self.name} is already running")
        self._running = True
        self._finished = asyncio.Event()
        try:
            async with asyncio.TaskGroup() as workers:
                for i in range(self._workers):
                    workers.create_task(self._work(), name=f"{self.name}-worker-{i}")
        finally:
            self._running = False
            self._finished.set()

    async def stop(self) -> None:
        """Stop taking keys and wait for the workers to finish the keys they hold."""
        await self.queue.aclose()
        if self._running:
            await self._finished.wait()

    async def _work(self) -> None:
        while True:
            try:
                key = await self.queue.get()
            except QueueShutDown:
                return
            try:
                await self._reconcile(key)
            finally:
                self.queue.done(key)

    async def _reconcile(self, key: str) -> None:
        try:
            result = await self._reconciler.reconcile(key)
        except Exception as err:
            self._observe_eviction(key, err)
            self.queue.add_rate_limited(key)
            # One line per failure; the traceback only when someone asked for debug logs, since
            # a failing key is retried and would otherwise repeat it at every backoff step.
            self._log.warning(
                "event=reconcile_error controller=%s key=%s retries=%d error=%s: %s",
                self.name,
                key,
                self.queue.num_requeues(key),
                type(err).__name__,
                err,
                exc_info=self._log.isEnabledFor(logging.DEBUG),
            )
            return
        self._observe_eviction(key, None)
        self.queue.forget(key)
        if result is not None and result.requeue_after is not None:
            self.queue.add_after(key, result.requeue_after)

    def _observe_eviction(self, key: str, err: Exception | None) -> None:
        if not self.eviction:
            return
        added = self.queue.enqueued_at(key)
        if added is not None:
            self._eviction_latency(self.name).observe(time.perf_counter() - added)
        self._eviction_results(self.name, metrics.result_of(err)).inc()
