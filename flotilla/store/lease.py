"""An etcd lease kept alive in the background, and known to be valid only while etcd cannot
yet have let it expire.

What is fenced by a lease (a leader's work, a replica's shards) may be done only while
`valid()`: etcd counts a refresh's TTL from when it handled it, which is after the refresh was
sent, so validity counts from when the last successful refresh was *sent*, less a margin for
clock rates, never from when its answer came.

A refresh that fails or goes unanswered is tried again at once (after a short pause), each try
bounded by the validity that is left, not after a whole refresh interval: on a loaded machine
one slow answer (etcd waits for its applied index to catch up before it renews) must not cost
the lease while there was still time to keep it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from flotilla.aio.clock import Clock
from flotilla.aio.tasks import bounded, cancel_and_wait
from flotilla.store.base import StoreBase
from flotilla.store.errors import StoreError

log = logging.getLogger(__name__)

# What a lost or restarting store raises: its own errors, and our own bound on a call.
STORE_ERRORS = (StoreError, TimeoutError)


class KeptLease:
    """A lease refreshed every third of its TTL; `lost` is set once it is gone or may be."""

    def __init__(self, store: StoreBase, clock: Clock, ttl: int) -> None:
        self.store = store
        self.clock = clock
        self.ttl = ttl
        self.id: int | None = None
        self.lost = asyncio.Event()
        self._valid_until = 0.0
        self._task: asyncio.Task[None] | None = None
        self._margin = min(1.0, ttl / 10)
        self._interval = max(ttl / 3, 0.2)
        # Between tries of a refresh that failed: several fit in what is left of the validity.
        self._retry = self._interval / 10

    def valid(self) -> bool:
        return self.id is not None and not self.lost.is_set() and self.clock.monotonic() < self._valid_until

    async def grant(self) -> int:
        sent = self.clock.monotonic()
        lease = await bounded(self.store.grant_lease(self.ttl), self.ttl)
        self.id = lease
        self._valid_until = sent + self.ttl - self._margin
        self.lost.clear()
        self._task = asyncio.create_task(self._keep_alive(lease))
        return lease

    async def _keep_alive(self, lease: int) -> None:
        pause = self._interval
        while True:
            await self.clock.sleep(pause)
            sent = self.clock.monotonic()
            left = self._valid_until - sent
            if left <= 0:
                break
            try:
                remaining = await bounded(self.store.refresh_lease(lease), left)
            except STORE_ERRORS as e:
                log.warning("event=lease-refresh-failed lease=%x valid_for=%.2fs error=%s: %s",
                            lease, max(self._valid_until - self.clock.monotonic(), 0.0), type(e).__name__, e)
                pause = self._retry
                continue
            if remaining <= 0 or self.clock.monotonic() >= self._valid_until:
                # Expired; or its validity ran out while the refresh was out, and for that moment
                # whatever it fences was not done: the holder's term ends, and the next one
                # starts afresh rather than carry on as if it had held throughout.
                break
            self._valid_until = sent + self.ttl - self._margin
            pause = self._interval
        log.warning("event=lease-lost lease=%x", lease)
        self.lost.set()

    async def revoke(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)
        lease, self.id = self.id, None
        self.lost.set()
        if lease is not None:
            with contextlib.suppress(*STORE_ERRORS):
                await bounded(self.store.revoke_lease(lease), self.ttl)
