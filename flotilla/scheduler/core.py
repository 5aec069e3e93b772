"""Scheduling one binding against a snapshot of the clusters: filter, score, select, divide.

This is the one function behind the scheduler service, `flotillactl schedule -f`,
`flotillactl explain` and `flotillactl whatif`; it reads only its arguments and
writes nothing, so all four give the same answer for the same inputs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from flotilla.api.bindings import Binding
from flotilla.api.v1 import cluster_pb2, policy_pb2, work_pb2
from flotilla.scheduler import division, metrics, selection
from flotilla.scheduler.affinities import terms_to_try
from flotilla.scheduler.binding_info import binding_info, for_cluster_affinity, for_term
from flotilla.scheduler.capacity import (
    MAX_INT32,
    ClusterCapacity,
    NoReservations,
    Request,
    Reservations,
    component_set,
    max_component_sets,
    max_replicas,
    replica_request,
)
from flotilla.scheduler.framework import Framework, PluginFailure, Unfit, fit_error_message
from flotilla.scheduler.placement import (
    AGGREGATED,
    DUPLICATED,
    STATIC_WEIGHT,
    effective_placement,
    is_multi_template,
    is_workload,
    reschedule_requested,
    strategy_of,
)
from flotilla.scheduler.plugin_api import AffinityMatcher, BindingInfo, ClusterInfo

SUCCESS_MESSAGE = "Binding has been scheduled successfully."



class Outcome(StrEnum):
    """The Scheduled condition's reason (Karmada's names)."""

    SUCCESS = "Success"
    # No cluster passed the filters: spec.clusters is cleared.
    NO_CLUSTER_FIT = "NoClusterFit"
    # Clusters fit but cannot hold the replicas, or the spread constraints cannot be met:
    # spec.clusters is left as it is and scheduling is retried.
    UNSCHEDULABLE = "Unschedulable"
    SCHEDULER_ERROR = "SchedulerError"


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The clusters (sorted by name) and what they can hold, at one moment."""

    clusters: tuple[ClusterInfo, ...]
    capacities: Mapping[str, ClusterCapacity]
    now: datetime
    reservations: Reservations = field(default_factory=NoReservations)
    # The clusters not being deleted: one tuple for every binding scheduled against the
    # snapshot, which lets plugins remember what they worked out about it.
    candidates: tuple[ClusterInfo, ...] = ()

    def __post_init__(self) -> None:
        if not self.candidates:
            object.__setattr__(self, "candidates", tuple(c for c in self.clusters if not c.deleting))

    @classmethod
    def of(cls, clusters: Iterable[cluster_pb2.Cluster], now: datetime,
           reservations: Reservations | None = None) -> Snapshot:
        ordered = sorted(clusters, key=lambda c: c.metadata.name)
        return cls(
            clusters=tuple(ClusterInfo.from_cluster(c) for c in ordered),
            capacities={c.metadata.name: ClusterCapacity.from_cluster(c) for c in ordered},
            now=now,
            reservations=reservations or NoReservations(),
        )


@dataclass(frozen=True, slots=True)
class Attempt:
    """One clusterAffinities term that did not work out."""

    affinity_name: str
    outcome: Outcome
    message: str


@dataclass(frozen=True, slots=True)
class Decision:
    outcome: Outcome
    message: str
    # The new spec.clusters, or None to leave them as they are.
    clusters: list[tuple[str, int]] | None
    unfit: list[Unfit] = field(default_factory=list)
    # The clusterAffinities term the binding settled on (None: leave the status alone).
    affinity_name: str | None = None
    # Terms tried before this one, in order.
    attempts: list[Attempt] = field(default_factory=list)
    # What each of `clusters` runs of a multi-component workload: (component, replicas), the
    # whole set (MultiplePodTemplatesScheduling); empty for every other binding.
    components: tuple[tuple[str, int], ...] = ()

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.SUCCESS


def schedule(binding: Binding, snapshot: Snapshot, framework: Framework,
             empty_workload_propagation: bool = False, multiple_pod_templates: bool = False) -> Decision:
    """`multiple_pod_templates`: the feature gate MultiplePodTemplatesScheduling (alpha, off in
    Karmada), under which a binding with components placed on exactly one cluster is scheduled
    as one whole set onto a cluster that can hold it."""
    spec, status = binding.spec, binding.status
    placement = effective_placement(spec.placement)
    base = binding_info(binding, placement, snapshot.now)
    plan = _Plan(spec, placement, snapshot, framework, empty_workload_propagation, multiple_pod_templates)
    if not placement.cluster_affinities:
        return plan.attempt(for_cluster_affinity(base, placement))
    # Ordered fallback groups: the first term that schedules wins.
    attempts: list[Attempt] = []
    first: Decision | None = None
    for term in terms_to_try(placement, status.scheduler_observing_affinity_name,
                             reschedule_requested(spec, status)):
        decision = plan.attempt(for_term(base, term, plan.workload))
        if decision.ok:
            return Decision(decision.outcome, decision.message, decision.clusters, decision.unfit,
                            term.affinity_name, attempts, decision.components)
        first = first or decision
        attempts.append(Attempt(term.affinity_name, decision.outcome, decision.message))
    if first is None:
        return Decision(Outcome.SCHEDULER_ERROR, "no clusterAffinities term to schedule with", None)
    # Every term failed: the first term's outcome decides, as in Karmada (only "nothing fits"
    # clears the result; the observed term stays), but the message names every term's reasons:
    # the first term's alone hides why the fallback did not take the binding either.
    return Decision(first.outcome, attempts_message(attempts), first.clusters, first.unfit, None, attempts)


def attempts_message(attempts: Sequence[Attempt]) -> str:
    """The message of a schedule whose every clusterAffinities term failed: a single term's
    message as it is (Karmada's), several terms' each after the term's name."""
    if len(attempts) == 1:
        return attempts[0].message
    return "; ".join(f'clusterAffinities term "{a.affinity_name}": {a.message}' for a in attempts)


class _Plan:
    """What stays the same across clusterAffinities terms for one binding."""

    def __init__(self, spec: work_pb2.ResourceBindingSpec, placement: policy_pb2.Placement, snapshot: Snapshot,
                 framework: Framework, empty_workload_propagation: bool, multiple_pod_templates: bool) -> None:
        self.spec = spec
        self.placement = placement
        self.snapshot = snapshot
        self.framework = framework
        self.empty_workload_propagation = empty_workload_propagation
        self.workload = is_workload(spec)
        self.request: Request | None = replica_request(spec) if self.workload else None
        # One whole set on one cluster: clusters are estimated in sets and selected for one.
        self.multi_template = multiple_pod_templates and is_multi_template(spec)
        self.pods_per_set, self.per_set = component_set(spec.components) if self.multi_template else (0, ())
        self.strategy = strategy_of(placement)
        self._allocatable: dict[str, int] = {}

    def allocatable(self, cluster: str) -> int:
        """Replicas the cluster can still take (estimated once per binding)."""
        found = self._allocatable.get(cluster)
        if found is None:
            capacity = self.snapshot.capacities.get(cluster)
            if capacity is None:
                found = 0
            elif self.multi_template:
                found = max_component_sets(capacity, self.pods_per_set, self.per_set,
                                           self.snapshot.reservations.reserved(cluster))
            else:
                found = max_replicas(capacity, self.request, self.snapshot.reservations.reserved(cluster))
            self._allocatable[cluster] = found
        return found

    def attempt(self, binding: BindingInfo) -> Decision:
        candidates = self.snapshot.candidates
        if not candidates:
            return Decision(Outcome.SCHEDULER_ERROR, "no clusters available to schedule", None)
        timer = metrics.StepTimer()
        try:
            feasible, unfit = self.framework.filter(binding, candidates)
            timer.done("Filter")
            if not feasible:
                return Decision(Outcome.NO_CLUSTER_FIT, fit_error_message(len(candidates), unfit), [], unfit)
            scores = self.framework.score(binding, feasible)
            timer.done("Score")
        except PluginFailure as e:
            return Decision(Outcome.SCHEDULER_ERROR, str(e), None)
        ranked = selection.rank([self._candidate(binding, c, scores[c.name]) for c in feasible])
        try:
            # A multi-component workload needs room for one whole set (Karmada selects for 1).
            selected = selection.select(ranked, self.placement, 1 if self.multi_template else self.spec.replicas)
            timer.done("Select")
            targets = self._assign(binding, selected)
            timer.done("AssignReplicas")
        except (selection.SpreadError, division.Unschedulable) as e:
            return Decision(Outcome.UNSCHEDULABLE, str(e), None, unfit)
        return Decision(Outcome.SUCCESS, SUCCESS_MESSAGE, targets, unfit, components=self._components())

    def _components(self) -> tuple[tuple[str, int], ...]:
        """Each target's share of a multi-component workload: all of it (Karmada records it
        for more than one component only)."""
        if not self.multi_template or len(self.spec.components) < 2:
            return ()
        return tuple((c.name, c.replicas) for c in self.spec.components)

    def _candidate(self, binding: BindingInfo, cluster: ClusterInfo, score: int) -> selection.Candidate:
        # Non-workloads are not estimated: any cluster can hold them.
        available = self.allocatable(cluster.name) if self.workload or self.multi_template else MAX_INT32
        # What runs there already needs no new room: the current share, or the only copy a
        # cluster taking the workload back still runs.
        if self.multi_template:
            # The set it runs there needs no new room: never moved off for want of a second.
            available += cluster.name in binding.targets or cluster.name in binding.returning
        else:
            available += binding.targets.get(cluster.name, 0) or binding.returning.get(cluster.name, 0)
        tier = 0
        if binding.overflow and binding.affinity is not None and not binding.affinity.matches(cluster):
            tier = next((i + 1 for i, term in enumerate(binding.overflow) if term.matches(cluster)), 0)
        return selection.Candidate(cluster.name, score, available, tier, cluster)

    def _assign(self, binding: BindingInfo, selected: Sequence[selection.Candidate]) -> list[tuple[str, int]]:
        if not selected:
            raise division.Unschedulable("no clusters available to schedule")
        names = [c.name for c in selected]
        if not self.workload:
            return [(name, 0) for name in names]
        replicas = self.spec.replicas
        if self.strategy == DUPLICATED:
            targets = division.duplicated(names, replicas)
        elif self.strategy == STATIC_WEIGHT:
            targets = division.static_weight(replicas, self._static_weights(selected), self.spec.resource.uid)
        else:
            targets = division.dynamic(
                names,
                [(t.name, t.replicas) for t in self.spec.clusters],
                replicas,
                # The only copy a cluster taking the workload back still runs needs no new room.
                {name: self.allocatable(name) + binding.returning.get(name, 0) for name in names},
                aggregated=self.strategy == AGGREGATED,
                fresh=reschedule_requested(self.spec, binding.status),
                uid=self.spec.resource.uid,
                tiers={c.name: c.tier for c in selected},
            )
        kept = division.without_zero(targets)
        if self.empty_workload_propagation:
            present = {name for name, _ in kept}
            kept.extend((name, 0) for name in names if name not in present)
        return kept

    def _static_weights(self, selected: Sequence[selection.Candidate]) -> dict[str, int]:
        """The largest weight of the rules matching each cluster; all 1 when none is positive."""
        strategy = self.placement.replica_scheduling
        rules = [(AffinityMatcher.of(rule.target_cluster), rule.weight)
                 for rule in strategy.weight_preference.static_weight_list]
        weights = {c.name: max((w for matcher, w in rules if matcher.matches(c.info)), default=0) for c in selected}
        if not any(w > 0 for w in weights.values()):
            return dict.fromkeys(weights, 1)
        return weights
