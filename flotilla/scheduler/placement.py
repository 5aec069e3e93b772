"""The placement as scheduling reads it, and the facts about a binding that decide how it is scheduled.

Admitted objects already carry the defaults applied here; applying them again is
idempotent, and it lets `flotillactl schedule -f` read hand-written YAML that never
went through admission the way the service reads the admitted object.
"""

from __future__ import annotations

from datetime import datetime

from flotilla.api.v1 import policy_pb2, work_pb2
from flotilla.api.wellknown import APPLICATION_FAILOVER_PRODUCER
from flotilla.rules.aggregated_status import DIRECTLY

DUPLICATED, DIVIDED = "Duplicated", "Divided"
AGGREGATED, WEIGHTED = "Aggregated", "Weighted"
SPREAD_BY_CLUSTER = "cluster"

STATIC_WEIGHT = "StaticWeight"
DYNAMIC_WEIGHT = "DynamicWeight"


def _needs_defaults(placement: policy_pb2.Placement) -> bool:
    if placement.HasField("replica_scheduling"):
        strategy = placement.replica_scheduling
        if not strategy.replica_scheduling_type:
            return True
        if strategy.replica_scheduling_type == DIVIDED and not strategy.replica_division_preference:
            return True
    return any(
        (not c.spread_by_field and not c.spread_by_label) or c.min_groups == 0 for c in placement.spread_constraints
    )


def effective_placement(placement: policy_pb2.Placement) -> policy_pb2.Placement:
    """The CRD and webhook defaults that shape scheduling: Divided when replicaScheduling is
    given without a type, Weighted for Divided, spread by cluster, minGroups 1. maxGroups
    has no default (0 selects nothing, as in Karmada)."""
    if not _needs_defaults(placement):
        return placement
    result = policy_pb2.Placement()
    result.CopyFrom(placement)
    if result.HasField("replica_scheduling"):
        strategy = result.replica_scheduling
        strategy.replica_scheduling_type = strategy.replica_scheduling_type or DIVIDED
        if strategy.replica_scheduling_type == DIVIDED and not strategy.replica_division_preference:
            strategy.replica_division_preference = WEIGHTED
    for constraint in result.spread_constraints:
        if not constraint.spread_by_field and not constraint.spread_by_label:
            constraint.spread_by_field = SPREAD_BY_CLUSTER
        if constraint.min_groups == 0:
            constraint.min_groups = 1
    return result


def strategy_of(placement: policy_pb2.Placement) -> str:
    """Duplicated (also for no replicaScheduling), Aggregated, DynamicWeight or StaticWeight."""
    if not placement.HasField("replica_scheduling"):
        return DUPLICATED
    strategy = placement.replica_scheduling
    if strategy.replica_scheduling_type != DIVIDED:
        return DUPLICATED
    if strategy.replica_division_preference == AGGREGATED:
        return AGGREGATED
    if strategy.weight_preference.dynamic_weight:
        return DYNAMIC_WEIGHT
    return STATIC_WEIGHT


def is_workload(spec: work_pb2.ResourceBindingSpec) -> bool:
    """Replicas to divide: replicas or requirements, and at most one pod template (docs/karmada-rules.md §8.5)."""
    return (spec.replicas > 0 or spec.HasField("replica_requirements")) and len(spec.components) <= 1


def is_multi_template(spec: work_pb2.ResourceBindingSpec) -> bool:
    """Karmada's isMultiTemplateSchedulingApplicable: components, and a spread constraint that
    places the workload on exactly one cluster (by cluster, minGroups = maxGroups = 1). A
    multi-component workload is scheduled whole, one set on one cluster, never divided."""
    return bool(spec.components) and any(
        c.spread_by_field == SPREAD_BY_CLUSTER and c.min_groups == 1 and c.max_groups == 1
        for c in spec.placement.spread_constraints)


def reschedule_requested(spec: work_pb2.ResourceBindingSpec, status: work_pb2.ResourceBindingStatus) -> bool:
    """An explicit reschedule (rescheduleTriggeredAt) newer than the last schedule; both must be set."""
    if not spec.HasField("reschedule_triggered_at") or not status.HasField("last_scheduled_time"):
        return False
    return spec.reschedule_triggered_at.ToNanoseconds() > status.last_scheduled_time.ToNanoseconds()


def blocked_clusters(spec: work_pb2.ResourceBindingSpec, now: datetime) -> frozenset[str]:
    """Clusters application failover moved the workload away from, still within
    blockPredecessorSeconds. Without that setting an entry blocks for as long as the
    eviction history keeps it."""
    if not spec.active_eviction_history:
        return frozenset()
    application = spec.failover.application
    if not application.HasField("block_predecessor_seconds"):
        return frozenset(item.cluster_name for item in spec.active_eviction_history)
    now_s = now.timestamp()
    block = application.block_predecessor_seconds
    return frozenset(
        item.cluster_name for item in spec.active_eviction_history
        if item.creation_timestamp.seconds + block > now_s
    )


def returning_clusters(spec: work_pb2.ResourceBindingSpec,
                       status: work_pb2.ResourceBindingStatus) -> dict[str, int]:
    """Clusters in graceful eviction tasks that may have the workload back if they can take it,
    with the replicas the copy there runs.

    While the evicted replicas are placed nowhere, a task whose old copy still runs is kept
    whatever its age: that copy is the only one (services/eviction/assessment.py, rule 4). Were
    its cluster kept out of scheduling for as long as the task lasts, the binding would stay
    placed nowhere once that cluster could run the workload again, waiting for a placement its
    own task forbids. So with nothing placed, a task whose copy runs (any purge mode but
    Directly) does not keep its cluster out once what it was evicted for has passed: for an
    application failover, the application there has reported Healthy since; for a cluster
    failover, the cluster's own state, which the ClusterEviction filter judges. Placed there
    again, the task is dropped as re-selected and the running copy is kept as it is.
    """
    if spec.clusters:
        return {}
    health = {item.cluster_name: item.health for item in status.aggregated_status}
    return {
        task.from_cluster: task.replicas for task in spec.graceful_eviction_tasks
        if task.purge_mode not in DIRECTLY
        and (task.producer != APPLICATION_FAILOVER_PRODUCER or health.get(task.from_cluster) == "Healthy")
    }
