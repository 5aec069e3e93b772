"""`placement.replicaScheduling`: Duplicated or Divided, and how Divided splits replicas."""

from __future__ import annotations

from collections.abc import Iterator

from flotilla.api.codec import FieldError
from flotilla.api.v1.policy_pb2 import Placement, ReplicaSchedulingStrategy
from services.webhook.rules.affinity import validate_cluster_affinity
from services.webhook.rules.fields import child, index, invalid, required, unsupported

DUPLICATED = "Duplicated"
DIVIDED = "Divided"
SCHEDULING_TYPES = (DUPLICATED, DIVIDED)
AGGREGATED = "Aggregated"
WEIGHTED = "Weighted"
DIVISION_PREFERENCES = (AGGREGATED, WEIGHTED)
DYNAMIC_WEIGHTS = ("AvailableReplicas",)


def default_replica_scheduling(placement: Placement) -> None:
    """The CRD's Divided, then the webhook's Weighted; an absent replicaScheduling stays absent (Duplicated)."""
    if not placement.HasField("replica_scheduling"):
        return
    strategy = placement.replica_scheduling
    if not strategy.replica_scheduling_type:
        strategy.replica_scheduling_type = DIVIDED
    if strategy.replica_scheduling_type == DIVIDED and not strategy.replica_division_preference:
        strategy.replica_division_preference = WEIGHTED


def allows_overflow(strategy: ReplicaSchedulingStrategy | None) -> bool:
    """Overflow terms only make sense when replicas are divided by what clusters can hold."""
    if strategy is None or strategy.replica_scheduling_type != DIVIDED:
        return False
    return strategy.replica_division_preference == AGGREGATED or bool(strategy.weight_preference.dynamic_weight)


def validate_replica_scheduling(strategy: ReplicaSchedulingStrategy, path: str) -> Iterator[FieldError]:
    type_path = child(path, "replicaSchedulingType")
    if not strategy.replica_scheduling_type:
        yield required(type_path)
    elif strategy.replica_scheduling_type not in SCHEDULING_TYPES:
        yield unsupported(type_path, strategy.replica_scheduling_type, SCHEDULING_TYPES)
    preference = strategy.replica_division_preference
    if preference and preference not in DIVISION_PREFERENCES:
        yield unsupported(child(path, "replicaDivisionPreference"), preference, DIVISION_PREFERENCES)
    weights_path = child(path, "weightPreference")
    dynamic = strategy.weight_preference.dynamic_weight
    if dynamic and dynamic not in DYNAMIC_WEIGHTS:
        yield unsupported(child(weights_path, "dynamicWeight"), dynamic, DYNAMIC_WEIGHTS)
    for i, static in enumerate(strategy.weight_preference.static_weight_list):
        item_path = index(child(weights_path, "staticWeightList"), i)
        if static.weight < 1:
            yield invalid(child(item_path, "weight"), static.weight, "must be greater than 0")
        if static.HasField("target_cluster"):
            yield from validate_cluster_affinity(static.target_cluster, child(item_path, "targetCluster"))
