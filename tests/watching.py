"""Awaiting a condition on an informer's view instead of sleeping (shared by tests)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from flotilla.store.informer import Informer


class Watch:
    def __init__(self, informer: Informer) -> None:
        self.informer = informer
        self.changed = asyncio.Condition()
        informer.add_handler(self._notify)

    async def _notify(self, *_: object) -> None:
        async with self.changed:
            self.changed.notify_all()

    async def until(self, predicate: Callable[[], bool], timeout: float = 15, since: float | None = None) -> float:
        """Seconds from `since` (default: now) until the predicate holds on the informer's view."""
        start = time.monotonic() if since is None else since
        async with asyncio.timeout(timeout), self.changed:
            await self.changed.wait_for(predicate)
        return time.monotonic() - start
