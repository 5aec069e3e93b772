"""How many more replicas of a workload a cluster can hold (docs/karmada-rules.md §8.4, Karmada's general
estimator), and the reservation ledger that keeps a burst of decisions from herding.

The estimate comes from Cluster.status.resourceSummary: for each resource the
workload requests, (allocatable - allocated - allocating) / request per replica,
capped by the pods the cluster can still admit. A summary is a report from the
past, though: when a cluster fails and hundreds of bindings are rescheduled in
a second, every one of them would read the same stale free capacity and pile
onto the same destination (Karmada #6518). The ledger remembers the replicas
each decision just placed and subtracts them from the cluster until its next
reports can be trusted to include them.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Protocol

from flotilla.aio.clock import Clock
from flotilla.api.v1 import cluster_pb2, work_pb2
from flotilla.member.quantity import Quantity

CPU = "cpu"
PODS = "pods"
MAX_INT32 = 2**31 - 1


@dataclass(frozen=True, slots=True)
class ClusterCapacity:
    """A cluster's free resources in base units (cpu in millicores, everything else whole units)."""

    reported: bool
    pods: int
    free: Mapping[str, int]

    @classmethod
    def from_cluster(cls, cluster: cluster_pb2.Cluster) -> ClusterCapacity:
        if not cluster.status.HasField("resource_summary"):
            return cls(False, 0, {})
        summary = cluster.status.resource_summary
        pods = (_whole(summary.allocatable, PODS) - _whole(summary.allocated, PODS)
                - _whole(summary.allocating, PODS))
        free = {}
        for name in summary.allocatable:
            left = _amount(summary.allocatable, name) - _amount(summary.allocated, name) - _amount(
                summary.allocating, name)
            free[name] = math.ceil(left * 1000) if name == CPU else math.ceil(left)
        return cls(True, max(pods, 0), free)


def _amount(resources: Mapping[str, str], name: str) -> Fraction:
    text = resources.get(name)
    return Quantity.parse(text).amount if text else Fraction(0)


def _whole(resources: Mapping[str, str], name: str) -> int:
    # Karmada subtracts whole pod counts (Quantity.Value()), not exact amounts.
    return math.ceil(_amount(resources, name))


Request = tuple[tuple[str, int], ...]


def replica_request(binding_spec: work_pb2.ResourceBindingSpec) -> Request | None:
    """The per-replica request in base units; None when the binding has no replicaRequirements."""
    if not binding_spec.HasField("replica_requirements"):
        return None
    return _parse_request(tuple(sorted(binding_spec.replica_requirements.resource_request.items())))


@lru_cache(maxsize=4096)
def _parse_request(items: tuple[tuple[str, str], ...]) -> Request:
    parsed = []
    for name, text in items:
        quantity = Quantity.parse(text)
        # Karmada skips resources whose whole-unit value is not positive, then divides cpu in millicores.
        if quantity.value() <= 0:
            continue
        parsed.append((name, quantity.milli_value() if name == CPU else quantity.value()))
    return tuple(parsed)


@dataclass(slots=True)
class Reserved:
    pods: int = 0
    amounts: dict[str, int] = field(default_factory=dict)


NOTHING_RESERVED = Reserved()


def max_replicas(capacity: ClusterCapacity, request: Request | None, reserved: Reserved = NOTHING_RESERVED) -> int:
    """Karmada's GeneralEstimator.maxAvailableReplicas, less what the ledger holds."""
    if not capacity.reported:
        return 0
    pods = capacity.pods - reserved.pods
    if pods <= 0:
        return 0
    if request is None:
        return min(pods, MAX_INT32)
    best = pods
    for name, per_replica in request:
        free = capacity.free.get(name)
        if free is None:
            return 0
        free -= reserved.amounts.get(name, 0)
        if free <= 0:
            return 0
        best = min(best, free // per_replica)
    return min(best, MAX_INT32)


def component_set(components: Sequence[work_pb2.Component]) -> tuple[int, Request]:
    """One whole set of a multi-component workload: its pods, and what it requests in base
    units (each component's per-replica request times its replicas), as Karmada's general
    estimator sums them (podsInSet, perSetRequirement)."""
    pods = sum(c.replicas for c in components)
    total: dict[str, int] = {}
    for component in components:
        request = _parse_request(tuple(sorted(component.replica_requirements.resource_request.items())))
        for name, amount in request:
            total[name] = total.get(name, 0) + amount * component.replicas
    return pods, tuple(sorted(total.items()))


def max_component_sets(capacity: ClusterCapacity, pods_per_set: int, per_set: Request,
                       reserved: Reserved = NOTHING_RESERVED) -> int:
    """Karmada's GeneralEstimator.maxAvailableComponentSets: how many whole sets the cluster
    can still take, less what the ledger holds."""
    if not capacity.reported:
        return 0
    pods = capacity.pods - reserved.pods
    if pods <= 0:
        return 0
    if pods_per_set <= 0:
        return min(pods, MAX_INT32)
    best = pods // pods_per_set
    for name, amount in per_set:
        if amount <= 0:
            continue
        free = capacity.free.get(name, 0) - reserved.amounts.get(name, 0)
        if free <= 0:
            return 0
        best = min(best, free // amount)
    return min(best, MAX_INT32)


class Reservations(Protocol):
    def reserved(self, cluster: str) -> Reserved: ...


class NoReservations:
    """For offline scheduling: nothing is in flight."""

    def reserved(self, cluster: str) -> Reserved:
        return NOTHING_RESERVED


@dataclass(slots=True)
class _Hold:
    replicas: int
    request: Request
    since: float


Holds = dict[str, _Hold]


class CapacityLedger:
    """Replicas placed by recent decisions, held against their clusters for `ttl` seconds.

    The TTL is how long a cluster's reported resourceSummary may lag a decision: the
    binding has to become a Work, the Work has to be applied, the pods created and the
    next status report written. Within it, a decision's new replicas count as used
    whatever the summary says, so a storm of reschedules spreads by real headroom.
    """

    def __init__(self, clock: Clock, ttl: float) -> None:
        self.clock = clock
        self.ttl = ttl
        self._holds: dict[str, Holds] = {}  # binding -> cluster -> hold
        self._totals: dict[str, Reserved] = {}  # cluster -> sum of its holds
        # (expiry, sequence, binding, cluster, hold); an entry whose hold was replaced is stale.
        self._expiries: list[tuple[float, int, str, str, _Hold]] = []
        self._sequence = itertools.count()

    def reserved(self, cluster: str) -> Reserved:
        self._expire()
        return self._totals.get(cluster, NOTHING_RESERVED)

    def record(self, binding: str, before: Mapping[str, int], after: Mapping[str, int],
               request: Request | None) -> Holds:
        """A decision moved `binding` from `before` to `after` (cluster -> replicas): hold the
        replicas it added. Returns what the binding held before, for `undo`."""
        self._expire()
        previous = dict(self._holds.get(binding, {}))
        now = self.clock.monotonic()
        for cluster, hold in previous.items():
            replicas = after.get(cluster, 0)
            if replicas < hold.replicas:
                self._release(binding, cluster)
                if replicas > 0:
                    self._hold(binding, cluster, _Hold(replicas, hold.request, hold.since))
        for cluster, replicas in after.items():
            added = replicas - before.get(cluster, 0)
            if added > 0:
                held = self._holds.get(binding, {}).get(cluster)
                self._release(binding, cluster)
                total = min((held.replicas if held else 0) + added, replicas)
                self._hold(binding, cluster, _Hold(total, request or (), now))
        return previous

    def undo(self, binding: str, previous: Holds) -> None:
        """Put back what `record` replaced (the decision was never written)."""
        self.forget(binding)
        for cluster, hold in previous.items():
            self._hold(binding, cluster, hold)

    def forget(self, binding: str) -> None:
        for cluster in list(self._holds.get(binding, ())):
            self._release(binding, cluster)

    def _expire(self) -> None:
        deadline = self.clock.monotonic()
        expiries = self._expiries
        while expiries and expiries[0][0] <= deadline:
            _, _, binding, cluster, hold = heapq.heappop(expiries)
            if self._holds.get(binding, {}).get(cluster) is hold:
                self._release(binding, cluster)

    def _hold(self, binding: str, cluster: str, hold: _Hold) -> None:
        self._holds.setdefault(binding, {})[cluster] = hold
        heapq.heappush(self._expiries, (hold.since + self.ttl, next(self._sequence), binding, cluster, hold))
        total = self._totals.setdefault(cluster, Reserved())
        total.pods += hold.replicas
        for name, per_replica in hold.request:
            total.amounts[name] = total.amounts.get(name, 0) + per_replica * hold.replicas

    def _release(self, binding: str, cluster: str) -> None:
        holds = self._holds.get(binding)
        hold = holds.pop(cluster, None) if holds else None
        if hold is None:
            return
        if not holds:
            del self._holds[binding]
        total = self._totals[cluster]
        total.pods -= hold.replicas
        for name, per_replica in hold.request:
            total.amounts[name] -= per_replica * hold.replicas
        if total.pods <= 0 and not any(total.amounts.values()):
            del self._totals[cluster]
