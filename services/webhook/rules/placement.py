"""`spec.placement` of a PropagationPolicy or ClusterPropagationPolicy: defaults and validation by part."""

from __future__ import annotations

from collections.abc import Iterator

from flotilla.api.codec import FieldError
from flotilla.api.v1.policy_pb2 import Placement, WorkloadAffinity
from services.webhook.rules import names
from services.webhook.rules.affinity import validate_cluster_affinities, validate_cluster_affinity
from services.webhook.rules.fields import check, child, invalid, required
from services.webhook.rules.replica_scheduling import (
    allows_overflow,
    default_replica_scheduling,
    validate_replica_scheduling,
)
from services.webhook.rules.spread import default_spread_constraints, validate_spread_constraints
from services.webhook.rules.tolerations import default_tolerations, validate_tolerations


def default_placement(placement: Placement, not_ready_seconds: int, unreachable_seconds: int) -> None:
    default_spread_constraints(placement.spread_constraints)
    default_replica_scheduling(placement)
    default_tolerations(placement.cluster_tolerations, not_ready_seconds, unreachable_seconds)


def validate_placement(placement: Placement, path: str) -> Iterator[FieldError]:
    has_affinity = placement.HasField("cluster_affinity")
    if has_affinity and placement.cluster_affinities:
        yield FieldError(path, "clusterAffinities cannot co-exist with clusterAffinity")
    if has_affinity:
        yield from validate_cluster_affinity(placement.cluster_affinity, child(path, "clusterAffinity"))
    strategy = placement.replica_scheduling if placement.HasField("replica_scheduling") else None
    yield from validate_cluster_affinities(
        placement.cluster_affinities, allows_overflow(strategy), child(path, "clusterAffinities")
    )
    yield from validate_tolerations(placement.cluster_tolerations, child(path, "clusterTolerations"))
    yield from validate_spread_constraints(placement.spread_constraints, child(path, "spreadConstraints"))
    if strategy is not None:
        yield from validate_replica_scheduling(strategy, child(path, "replicaScheduling"))
    if placement.HasField("workload_affinity"):
        yield from validate_workload_affinity(placement.workload_affinity, child(path, "workloadAffinity"))


def validate_workload_affinity(affinity: WorkloadAffinity, path: str) -> Iterator[FieldError]:
    keys: dict[str, str] = {}
    for field, json_name in (("affinity", "affinity"), ("anti_affinity", "antiAffinity")):
        if not affinity.HasField(field):
            continue
        key_path = child(child(path, json_name), "groupByLabelKey")
        key = getattr(affinity, field).group_by_label_key
        if not key:
            yield required(key_path)
            continue
        yield from check(key_path, key, names.qualified_name)
        keys[json_name] = key
    if "affinity" in keys and keys.get("antiAffinity") == keys["affinity"]:
        # Grouping together and apart by the same label contradicts itself.
        yield invalid(
            child(child(path, "antiAffinity"), "groupByLabelKey"),
            keys["affinity"],
            "must differ from affinity.groupByLabelKey",
        )
