"""The Pull-mode agent: runs beside one member cluster, talks only to etcd and
that cluster. It publishes the cluster's status with the same probe rules the
status service uses for Push clusters, and renews the cluster's Lease once the
cluster has first been seen healthy (docs/karmada-rules.md §3 step 5)."""

from __future__ import annotations

import asyncio
import logging

from flotilla.aio.clock import Clock
from flotilla.aio.tasks import cancel_and_wait
from flotilla.api import registry
from flotilla.api.conditions import TRUE
from flotilla.clusterstatus.prober import ClusterProber
from flotilla.clusterstatus.publish import StatusPublisher
from flotilla.member import MemberClient
from flotilla.store import ObjectStore, StoreError
from services.executor.lease import LeaseRenewer

log = logging.getLogger(__name__)


class PullAgent:
    def __init__(self, store: ObjectStore, clock: Clock, cluster: str, client: MemberClient, prober: ClusterProber,
                 publisher: StatusPublisher, lease: LeaseRenewer, frequency: float,
                 lease_fraction: float) -> None:
        self.store = store
        self.clock = clock
        self.cluster = cluster
        self.client = client
        self.prober = prober
        self.publisher = publisher
        self.lease = lease
        self.frequency = frequency
        self.lease_fraction = lease_fraction
        self._renewing: asyncio.Task[None] | None = None

    async def sync_once(self) -> None:
        cluster = await self.store.try_get(registry.CLUSTER, "", self.cluster)
        if cluster is None:
            log.warning("event=cluster-missing cluster=%s", self.cluster)
            return

        async def connect() -> MemberClient:
            return self.client

        update = await self.prober.probe(self.cluster, cluster.status, connect)
        await self.publisher.publish(self.cluster, update)
        if self._renewing is not None and self._renewing.done():
            # The renewer retries etcd errors itself; anything else ended it, and without
            # renewals the status service would soon call a live agent dead.
            error = None if self._renewing.cancelled() else self._renewing.exception()
            log.error("event=lease-renewer-died cluster=%s error=%r; restarting it", self.cluster, error)
            self._renewing = None
        if update.ready.status == TRUE and self._renewing is None:
            self._renewing = asyncio.create_task(self.lease.run(self.lease_fraction))

    async def run(self) -> None:
        try:
            while True:
                try:
                    await self.sync_once()
                except StoreError as e:
                    # etcd away (restarting, say): the next tick tries again.
                    log.warning("event=agent-sync-failed cluster=%s error=%s", self.cluster, e)
                except Exception:
                    log.exception("event=agent-sync-failed cluster=%s", self.cluster)
                await self.clock.sleep(self.frequency)
        finally:
            await cancel_and_wait(self._renewing)
