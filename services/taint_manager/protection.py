"""Mass-failure protection for evictions, modelled on Kubernetes' node lifecycle controller.

When every cluster is unhealthy, the likely fault is the control plane's own
network, not the clusters: nothing is evicted. When more than the threshold of
a region's clusters are unhealthy, that region's clusters start evicting at the
secondary rate; otherwise at the primary rate (0: no limit). The unit is a
cluster: once a cluster is admitted, all of its bindings are evicted at full
speed. Admission is remembered until the cluster no longer needs evicting.

Evictions held back while everything was down are not owed once it is over: like Kubernetes,
which gives every node a fresh grace period when a full disruption ends, no cluster is admitted
until `recovery_grace` after the first cluster came back. Clusters return at different
moments (each must pass the success threshold), and the ones still down at first are
usually recovering too. A held eviction is then decided afresh on the clusters as they are,
so a cluster that recovered within the grace keeps its workloads.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from flotilla.aio.clock import Clock
from flotilla.api.clusters import cluster_ready
from flotilla.api.v1 import cluster_pb2

NORMAL, PARTIAL, FULL = "Normal", "PartialDisruption", "FullDisruption"


@dataclass(frozen=True)
class ProtectionConfig:
    unhealthy_threshold: float = 0.55
    primary_rate: float = 0.0  # clusters per second; 0 = no limit
    secondary_rate: float = 0.01
    # Seconds after a mass failure ends before evictions resume (the failover eviction timeout:
    # how long a cluster must stay unhealthy before its NoExecute taint).
    recovery_grace: float = 300.0


@dataclass(frozen=True)
class Admission:
    admitted: bool
    reason: str = ""
    retry_after: float | None = None  # None: wait for a cluster to change


@dataclass(frozen=True)
class RegionState:
    region: str
    clusters: int
    unhealthy: int
    state: str
    rate: float


def region_of(cluster: cluster_pb2.Cluster) -> str:
    return cluster.spec.region


def healthy(cluster: cluster_pb2.Cluster) -> bool:
    return cluster_ready(cluster)


class EvictionProtection:
    def __init__(self, clock: Clock, config: ProtectionConfig) -> None:
        self.clock = clock
        self.config = config
        self.regions: dict[str, RegionState] = {}
        self.everything_down = False
        self._region_of: dict[str, str] = {}
        self._admitted: set[str] = set()
        self._next_slot: dict[str, float] = {}
        # When the last mass failure ended (monotonic), while its recovery grace may run.
        self.recovered_at: float | None = None

    def observe(self, clusters: Iterable[cluster_pb2.Cluster], complete: bool = True) -> bool:
        """Recompute from the current clusters; returns whether any state changed.

        `complete`: the clusters are all there are. While an informer is still listing them a
        down cluster may be seen before its healthy peers, which is no mass failure ending.
        """
        before = (self.everything_down, dict(self.regions))
        was_down = self.everything_down
        counts: dict[str, list[int]] = {}
        self._region_of = {}
        for cluster in clusters:
            region = region_of(cluster)
            self._region_of[cluster.metadata.name] = region
            total_unhealthy = counts.setdefault(region, [0, 0])
            total_unhealthy[0] += 1
            total_unhealthy[1] += 0 if healthy(cluster) else 1
        total = sum(c[0] for c in counts.values())
        self.everything_down = total > 0 and all(c[0] == c[1] for c in counts.values())
        self.regions = {}
        for region, (n, bad) in counts.items():
            if self.everything_down:
                state, rate = FULL, 0.0
            elif n and bad / n > self.config.unhealthy_threshold:
                state, rate = PARTIAL, self.config.secondary_rate
            else:
                state, rate = NORMAL, self.config.primary_rate
            self.regions[region] = RegionState(region, n, bad, state, rate)
        if was_down and not self.everything_down and complete:
            self.recovered_at = self.clock.monotonic()
        return before != (self.everything_down, self.regions)

    def admit(self, cluster: str) -> Admission:
        if self.everything_down:
            return Admission(False, "every cluster is unhealthy: evictions are held back")
        if cluster in self._admitted:
            return Admission(True)
        if self.recovered_at is not None:
            left = self.recovered_at + self.config.recovery_grace - self.clock.monotonic()
            if left > 0:
                return Admission(False, "clusters are coming back from a mass failure: evictions resume "
                                        f"{self.config.recovery_grace:g}s after the first returned",
                                 retry_after=left)
            self.recovered_at = None
        region = self._region_of.get(cluster, "")
        state = self.regions.get(region)
        rate = state.rate if state else self.config.primary_rate
        if rate <= 0:
            if state is not None and state.state == PARTIAL:
                return Admission(False, f"region {region!r} is partially disrupted and its eviction rate is 0")
            self._admitted.add(cluster)
            return Admission(True)
        now = self.clock.monotonic()
        slot = self._next_slot.get(region, now)
        if now < slot:
            detail = f"{state.unhealthy}/{state.clusters} clusters unhealthy" if state else "rate limited"
            return Admission(False, f"region {region!r} ({detail}) evicts at {rate} clusters/s",
                             retry_after=slot - now)
        self._next_slot[region] = max(slot, now) + 1.0 / rate
        self._admitted.add(cluster)
        return Admission(True)

    def adopt(self, cluster: str) -> None:
        """The cluster was admitted by an earlier leader, for the failure it still has."""
        self._admitted.add(cluster)

    def release(self, cluster: str) -> None:
        """The cluster needs no more evicting (recovered, untainted or gone)."""
        self._admitted.discard(cluster)
