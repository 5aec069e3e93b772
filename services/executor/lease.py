"""The Pull-mode agent's Lease `karmada-cluster/<cluster>`: renewed every
renew-interval-fraction x lease-duration, so the status service can tell a
live agent from a dead one (docs/karmada-rules.md §3, §4.1)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from flotilla.aio.clock import Clock
from flotilla.api import registry
from flotilla.api.v1 import cluster_pb2, coordination_pb2
from flotilla.api.wellknown import CLUSTER_SECRET_NAMESPACE
from flotilla.store import AlreadyExists, NotFound, ObjectStore, StoreError

log = logging.getLogger(__name__)
LEASE_NAMESPACE = CLUSTER_SECRET_NAMESPACE


class LeaseRenewer:
    def __init__(self, store: ObjectStore, clock: Clock, cluster: str, holder: str, duration: float) -> None:
        self.store = store
        self.clock = clock
        self.cluster = cluster
        self.holder = holder
        self.duration = duration

    async def renew(self) -> None:
        now = self.clock.now()

        def change(lease: coordination_pb2.Lease) -> None:
            lease.spec.holder_identity = self.holder
            lease.spec.lease_duration_seconds = max(int(self.duration), 1)
            lease.spec.renew_time.FromDatetime(now.replace(tzinfo=None))

        try:
            await self.store.mutate(registry.LEASE, LEASE_NAMESPACE, self.cluster, change)
        except NotFound:
            await self._create(now, change)

    async def _create(self, now: datetime, change: Callable[[coordination_pb2.Lease], None]) -> None:
        lease = coordination_pb2.Lease(api_version=registry.LEASE.api_version, kind="Lease")
        lease.metadata.name = self.cluster
        lease.metadata.namespace = LEASE_NAMESPACE
        cluster: cluster_pb2.Cluster | None = await self.store.try_get(registry.CLUSTER, "", self.cluster)
        if cluster is not None:
            # Owned by its Cluster, so removing the cluster lets the Lease be collected with it.
            lease.metadata.owner_references.add(api_version=cluster.api_version, kind="Cluster",
                                                name=cluster.metadata.name, uid=cluster.metadata.uid)
        change(lease)
        lease.spec.acquire_time.CopyFrom(lease.spec.renew_time)
        try:
            await self.store.create(lease)
        except AlreadyExists:
            return

    async def run(self, fraction: float) -> None:
        interval = max(self.duration * fraction, 0.05)
        while True:
            try:
                await self.renew()
            except StoreError as e:
                log.warning("event=lease-renew-failed cluster=%s error=%s", self.cluster, e)
            await self.clock.sleep(interval)
