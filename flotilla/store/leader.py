"""Leader election on an etcd lease.

The leader holds `/flotilla/election/<service>` on its lease. A standby waits
for that key to go (deleted on resignation, expired with the lease when the
leader dies) and then races to create it. Leadership is lost the moment a
keep-alive finds the lease gone, or once etcd may have let it expire
(flotilla.store.lease: counted from when the last refresh was sent).

etcd going away is never fatal here: every call is bounded and retried with
backoff, so a campaign ends only in leadership (or cancellation). A key left
by this same instance's earlier term (its lease outlived an etcd restart:
etcd re-arms leases when it starts) is taken over at once rather than waited
out, since no other instance can hold it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from prometheus_client import Gauge

from flotilla.aio.clock import Clock, RealClock
from flotilla.aio.tasks import bounded, cancel_and_wait
from flotilla.store.base import KeyValue, StoreBase, WatchKind
from flotilla.store.lease import STORE_ERRORS, KeptLease

log = logging.getLogger(__name__)

ELECTION_PREFIX = "/flotilla/election/"

# client-go's leader_election_master_status: a service none of whose instances says 1 has no
# leader, so nothing of its work is done (the FlotillaServiceNoLeader alert, docs/alerts.md).
MASTER_STATUS = Gauge("flotilla_leader_election_master_status",
                      "1 while this instance leads its service, 0 otherwise", ["name"])


def election_key(service: str) -> str:
    return f"{ELECTION_PREFIX}{service}"


async def current_leader(store: StoreBase, service: str) -> str | None:
    got = await store.kv_get(election_key(service))
    return got.value.decode(errors="replace") if got else None


class LeaderElector:
    """Campaigns through the store's key-value primitives, so a service elects its leader the
    same way on etcd and through the plane's storage API (a Pull agent)."""

    def __init__(self, store: StoreBase, service: str, identity: str, ttl: int = 10,
                 backoff: tuple[float, float] = (0.2, 2.0),
                 on_retry: Callable[[BaseException], Awaitable[None]] | None = None,
                 on_standby: Callable[[str], Awaitable[None]] | None = None,
                 clock: Clock | None = None) -> None:
        self.store = store
        self.clock: Clock = clock or RealClock()
        self.key = election_key(service)
        # Exported from the first campaign on (at 0), so a standby shows as one.
        self._status = MASTER_STATUS.labels(service)
        self.identity = identity
        self.ttl = ttl
        self._lease: KeptLease | None = None
        self.lost = asyncio.Event()
        self._keepalive: asyncio.Task[None] | None = None
        self._backoff = backoff
        # Told of each failed attempt, so the service can say why it is not leading.
        self._on_retry = on_retry
        # Told when the store answered and another instance holds the key: a healthy standby.
        self._on_standby = on_standby
        self.holder = ""
        # One call may not outlast the lease it is trying to keep or win.
        self._call_timeout = max(float(ttl), 1.0)

    @property
    def lease_id(self) -> int | None:
        return self._lease.id if self._lease is not None else None

    @property
    def is_leader(self) -> bool:
        return self._lease is not None and self._lease.valid() and not self.lost.is_set()

    async def _bounded(self, awaitable: Awaitable[Any]) -> Any:
        return await bounded(awaitable, self._call_timeout)

    async def campaign(self) -> None:
        """Return once this instance is the leader; store errors are retried, not raised."""
        delay = self._backoff[0]
        while True:
            try:
                if await self._try_acquire():
                    return
                delay = self._backoff[0]
                if self._on_standby is not None:
                    await self._on_standby(self.holder)
                await self._wait_for_vacancy()
            except STORE_ERRORS as e:
                log.warning("event=campaign-retry key=%s identity=%s retry_in=%gs error=%s: %s",
                            self.key, self.identity, delay, type(e).__name__, e)
                if self._on_retry is not None:
                    await self._on_retry(e)
                await asyncio.sleep(delay)
                delay = min(delay * 2, self._backoff[1])

    async def _try_acquire(self) -> bool:
        lease = KeptLease(self.store, self.clock, self.ttl)
        lease_id = await lease.grant()
        mine = self.identity.encode()
        try:
            created = await self._bounded(self.store.kv_create(self.key, mine, lease_id))
            ok = isinstance(created, int)
            held = created if isinstance(created, KeyValue) else None
            self.holder = held.value.decode(errors="replace") if held is not None else ""
            if held is not None and held.value == mine:
                # Our own earlier term's key: replace it (compare-and-swap on its revision).
                ok = await self._bounded(self.store.kv_put_if(self.key, mine, held.mod_revision, lease_id)) is not None
        except BaseException:
            await lease.revoke()
            raise
        if not ok:
            await lease.revoke()
            return False
        self._lease = lease
        self.lost.clear()
        self._status.set(1)
        self._keepalive = asyncio.create_task(self._follow(lease))
        log.info("event=leader-acquired key=%s identity=%s", self.key, self.identity)
        return True

    async def _wait_for_vacancy(self) -> None:
        """Return when the key is gone, or after one TTL at most: a watch that silently
        stopped (etcd restarted under it) must not keep a standby waiting for ever."""
        got = await self._bounded(self.store.kv_get(self.key))
        if got is None:
            return
        # A watch of the key itself: the store's watch is by prefix, so other keys that
        # start with this one (service `a` and `a-2`) are skipped here.
        try:
            async with asyncio.timeout(self.ttl), contextlib.aclosing(
                    self.store.watch(self.key, got.mod_revision + 1)) as events:
                async for event in events:
                    if event.key == self.key and event.kind == WatchKind.DELETE:
                        return
        except TimeoutError:
            return

    async def _follow(self, lease: KeptLease) -> None:
        await lease.lost.wait()
        # Reached only when the lease is gone or may be; resigning cancels this task instead.
        log.warning("event=leader-lost key=%s identity=%s", self.key, self.identity)
        self._status.set(0)
        self.lost.set()

    async def resign(self) -> None:
        task, self._keepalive = self._keepalive, None
        await cancel_and_wait(task)
        lease, self._lease = self._lease, None
        if lease is not None:
            self._status.set(0)
            await lease.revoke()
        self.lost.set()
