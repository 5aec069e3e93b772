"""Every cluster-monitor-period, turn Pull clusters whose agent went quiet Ready=Unknown
(docs/karmada-rules.md §4.1)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from google.protobuf.timestamp_pb2 import Timestamp

from flotilla.aio.clock import Clock
from flotilla.api import registry
from flotilla.api.conditions import get_condition, set_condition
from flotilla.api.v1 import cluster_pb2, coordination_pb2
from flotilla.api.wellknown import CLUSTER_SECRET_NAMESPACE
from flotilla.clusterstatus.observation import READY, ReadyObservation
from flotilla.store import NotFound, ObjectStore, Undecodable
from flotilla.store.informer import Informer
from services.status.monitor import Grace, MonitorState, ReadySnapshot, assess
from services.status.push import is_pull

log = logging.getLogger(__name__)
LEASE_NAMESPACE = CLUSTER_SECRET_NAMESPACE


def _time(ts: Timestamp) -> datetime | None:
    if not ts.seconds and not ts.nanos:
        return None
    return ts.ToDatetime(tzinfo=UTC)


def ready_snapshot(cluster: cluster_pb2.Cluster) -> ReadySnapshot | None:
    # The writer's side: the whole condition, to compare with the next verdict, not cluster_ready.
    condition = get_condition(cluster.status.conditions, READY)
    if condition is None:
        return None
    return ReadySnapshot(condition.status, condition.reason, condition.message,
                         _time(condition.last_transition_time))


class HealthMonitor:
    def __init__(self, store: ObjectStore, clock: Clock, clusters: Informer[cluster_pb2.Cluster],
                 leases: Informer[coordination_pb2.Lease], grace: Grace) -> None:
        self.store = store
        self.clock = clock
        self.clusters = clusters
        self.leases = leases
        self.grace = grace
        self._states: dict[str, MonitorState] = {}

    async def tick(self) -> None:
        now = self.clock.now()
        names = set()
        for cluster in self.clusters.list():
            name = cluster.metadata.name
            names.add(name)
            try:
                lease = self.leases.get(f"{LEASE_NAMESPACE}/{name}")
            except Undecodable:
                # Its Lease is stored but never read: no renewal can be told from none, and a
                # member is not called silent for the plane's failure to read. Left as it is.
                continue
            verdict, self._states[name] = assess(
                ready=ready_snapshot(cluster),
                created=_time(cluster.metadata.creation_timestamp) or now,
                pull=is_pull(cluster),
                lease_renew=_time(lease.spec.renew_time) if lease is not None else None,
                state=self._states.get(name),
                now=now,
                grace=self.grace,
            )
            if verdict is None:
                continue

            def change(obj: cluster_pb2.Cluster, verdict: ReadyObservation = verdict) -> bool:
                return set_condition(obj.status.conditions, READY, verdict.status, verdict.reason, verdict.message,
                                     now)

            try:
                await self.store.mutate(registry.CLUSTER, "", name, change, status=True)
            except NotFound:
                continue
            log.info("event=cluster-unknown cluster=%s reason=%s", name, verdict.reason)
        for gone in set(self._states) - names:
            del self._states[gone]

    async def run(self, period: float) -> None:
        while True:
            try:
                await self.tick()
            except Exception:
                log.exception("event=monitor-tick-failed")
            await self.clock.sleep(period)
