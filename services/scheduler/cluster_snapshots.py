"""The cluster informer as scheduling snapshots: what every decision of the scheduler reads."""

from __future__ import annotations

from dataclasses import replace

from flotilla.aio.clock import Clock
from flotilla.api.v1 import cluster_pb2
from flotilla.scheduler import core
from flotilla.scheduler.capacity import CapacityLedger, ClusterCapacity
from flotilla.scheduler.plugin_api import ClusterInfo
from flotilla.store.informer import Informer


class ClusterView:
    """The cluster informer as scheduling snapshots. Each Cluster is digested once per
    version; a snapshot is rebuilt only after some cluster changed."""

    def __init__(self, informer: Informer[cluster_pb2.Cluster], clock: Clock, ledger: CapacityLedger) -> None:
        self.informer = informer
        self.clock = clock
        self.ledger = ledger
        self._digested: dict[str, tuple[str, ClusterInfo, ClusterCapacity]] = {}
        self._snapshot: core.Snapshot | None = None
        self._deleting: frozenset[str] = frozenset()

    def changed(self) -> None:
        self._snapshot = None

    def snapshot(self) -> core.Snapshot:
        """Undecodable while a cluster is stored but was never readable: a decision without it
        could move a binding off it, or place one elsewhere for want of it."""
        self.informer.check_complete()
        return replace(self._current(), now=self.clock.now())

    @property
    def deleting(self) -> frozenset[str]:
        self._current()
        return self._deleting

    def _current(self) -> core.Snapshot:
        if self._snapshot is None:
            digested = {}
            for cluster in self.informer.list():
                name, version = cluster.metadata.name, cluster.metadata.resource_version
                known = self._digested.get(name)
                if known is None or known[0] != version:
                    known = (version, ClusterInfo.from_cluster(cluster), ClusterCapacity.from_cluster(cluster))
                digested[name] = known
            self._digested = digested
            names = sorted(digested)
            self._snapshot = core.Snapshot(
                clusters=tuple(digested[n][1] for n in names),
                capacities={n: digested[n][2] for n in names},
                now=self.clock.now(),
                reservations=self.ledger,
            )
            self._deleting = frozenset(n for n in names if digested[n][1].deleting)
        return self._snapshot
