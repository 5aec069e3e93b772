"""Leader election on an etcd lease.

The leader holds `/flotilla/election/<service>` on its lease. A standby waits
for that key to go (deleted on resignation, expired with the lease when the
leader dies) and then races to create it. Leadership is lost the moment a
keep-alive finds the lease gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import aetcd
import aetcd.exceptions
import aetcd.rtypes

log = logging.getLogger(__name__)

ELECTION_PREFIX = "/flotilla/election/"


def election_key(service: str) -> str:
    return f"{ELECTION_PREFIX}{service}"


async def current_leader(client: aetcd.Client, service: str) -> str | None:
    got = await client.get(election_key(service).encode())
    return got.value.decode() if got else None


class LeaderElector:
    def __init__(self, client: aetcd.Client, service: str, identity: str, ttl: int = 10) -> None:
        self.client = client
        self.key = election_key(service).encode()
        self.identity = identity
        self.ttl = ttl
        self.lease_id: int | None = None
        self.lost = asyncio.Event()
        self._keepalive: asyncio.Task[None] | None = None

    @property
    def is_leader(self) -> bool:
        return self.lease_id is not None and not self.lost.is_set()

    async def campaign(self) -> None:
        """Return once this instance is the leader."""
        tx = self.client.transactions
        while True:
            lease = await self.client.lease(self.ttl)
            ok, _ = await self.client.transaction(
                compare=[tx.create(self.key) == 0],
                success=[tx.put(self.key, self.identity.encode(), lease=lease.id)],
                failure=[],
            )
            if ok:
                self.lease_id = lease.id
                self.lost.clear()
                self._keepalive = asyncio.create_task(self._keep_alive())
                log.info("event=leader-acquired key=%s identity=%s", self.key.decode(), self.identity)
                return
            await self.client.revoke_lease(lease.id)
            await self._wait_for_vacancy()

    async def _wait_for_vacancy(self) -> None:
        got = await self.client.get(self.key)
        if got is None:
            return
        watch = await self.client.watch(
            self.key, start_revision=got.mod_revision + 1, kind=aetcd.rtypes.EventKind.DELETE
        )
        try:
            async for _ in watch:
                return
        finally:
            with contextlib.suppress(Exception):
                await watch.cancel()

    async def _keep_alive(self) -> None:
        interval = max(self.ttl / 3, 0.2)
        loop = asyncio.get_running_loop()
        expires = loop.time() + self.ttl
        try:
            while True:
                await asyncio.sleep(interval)
                try:
                    reply = await asyncio.wait_for(self.client.refresh_lease(self.lease_id), interval)
                except (aetcd.exceptions.ClientError, TimeoutError) as e:
                    # Survivable while the lease still has time left; past that another
                    # instance may already lead, so we must stop acting as leader.
                    log.warning("event=lease-refresh-failed identity=%s error=%s", self.identity, e)
                    if loop.time() >= expires:
                        break
                    continue
                expires = loop.time() + self.ttl
                if reply is None or reply.TTL <= 0:
                    break
        finally:
            if not self.lost.is_set() and self.lease_id is not None:
                log.warning("event=leader-lost key=%s identity=%s", self.key.decode(), self.identity)
                self.lost.set()

    async def resign(self) -> None:
        task, self._keepalive = self._keepalive, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        lease_id, self.lease_id = self.lease_id, None
        if lease_id is not None:
            with contextlib.suppress(aetcd.exceptions.ClientError):
                await self.client.revoke_lease(lease_id)
        self.lost.set()
