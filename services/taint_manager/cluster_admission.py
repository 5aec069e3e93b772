"""The leader's half of mass-failure protection: it answers the replicas' requests to evict from
a cluster (admissions.py) with protection's decision, at the fleet-wide rate, and forgets a
cluster's admission once the cluster needs no evicting.

Keyed by cluster name. Each pass decides from the cluster as the informer has it and the record
as etcd holds it, and writes the record with a compare-and-swap on its revision: a pass that
lost a race is taken again when the record's change arrives.
"""

from __future__ import annotations

import logging

from flotilla.aio.clock import Clock
from flotilla.api.v1 import cluster_pb2
from flotilla.runtime.controller import Result
from flotilla.store import Undecodable
from flotilla.store.events import EventRecorder
from flotilla.store.informer import Informer
from services.taint_manager.admissions import (
    HELD,
    REQUESTED,
    AdmissionRecords,
    Record,
    Stored,
    admits,
    admitted_record,
    taints_in_force,
)
from services.taint_manager.protection import EvictionProtection
from services.taint_manager.tolerations import needs_no_evicting

log = logging.getLogger(__name__)


class ClusterAdmissionReconciler:
    def __init__(self, clock: Clock, clusters: Informer[cluster_pb2.Cluster], admissions: AdmissionRecords,
                 protection: EvictionProtection, events: EventRecorder | None = None) -> None:
        self.clock = clock
        self.clusters = clusters
        self.admissions = admissions
        self.protection = protection
        self.events = events

    async def reconcile(self, name: str) -> Result | None:
        await self.admissions.synced.wait()
        try:
            cluster = self.clusters.get(name)
        except Undecodable:
            return None  # unknown: its record stays as it is, whatever it says
        stored = self.admissions.get(name)
        if cluster is None or needs_no_evicting(cluster):
            if stored is not None and self._asked_about_what_is_coming(cluster, stored):
                return None
            self.protection.release(name)
            if stored is not None:
                await self.admissions.delete(name, stored)
            return None
        if stored is None:
            return None  # no replica has a binding due to leave it
        record = stored.record
        if admits(record, cluster):
            # Admitted by this leader or an earlier one: kept, and kept in step with the taints in
            # force, so that one taint replacing another does not end the admission.
            self.protection.adopt(name)
            current = admitted_record(cluster)
            if record != current:
                await self.admissions.write(name, current, stored)
            return None
        # Requested, held, not a record, or admitted for an earlier failure: decide now.
        admission = self.protection.admit(name)
        if admission.admitted:
            if await self.admissions.write(name, admitted_record(cluster), stored):
                log.info("event=cluster-admitted cluster=%s taints=%d", name, len(taints_in_force(cluster)))
            return None
        held = Record(HELD, cluster.metadata.uid, reason=admission.reason)
        if record != held:
            await self.admissions.write(name, held, stored)
        if self.events is not None:
            # Folded by the recorder into one Event per cluster and reason, with a count.
            await self.events.warning(cluster, "EvictionHeldBack",
                                      f"Mass-failure protection holds evictions back: {admission.reason}")
        return Result(requeue_after=admission.retry_after) if admission.retry_after is not None else None

    def _asked_about_what_is_coming(self, cluster: cluster_pb2.Cluster | None, stored: Stored) -> bool:
        """A request written after the version of the cluster this process has: the replica that
        asked may have seen a failure whose event is still on its way here, and that event brings
        the cluster back to this controller. (A request about a failure that is over is decided at
        the cluster's next change: the replicas that asked see it is over themselves.)"""
        if stored.record is None or stored.record.state != REQUESTED:
            return False
        seen = int(cluster.metadata.resource_version or 0) if cluster is not None else self.clusters.revision
        return seen < stored.mod_revision
