"""Whether a binding needs scheduling (docs/karmada-rules.md §8.1), as a pure function of the binding.

Divided workloads are deliberately left where they are when a cluster turns NotReady,
gets a NoSchedule taint or changes labels: only eviction (which takes the cluster out of
spec.clusters), replica changes, placement changes, an explicit reschedule or cluster
deletion move them.
"""

from __future__ import annotations

from collections.abc import Container
from enum import StrEnum
from functools import lru_cache

from flotilla.api import codec, jsonbytes
from flotilla.api.v1 import policy_pb2, work_pb2
from flotilla.api.wellknown import APPLIED_PLACEMENT_ANNOTATION
from flotilla.scheduler.placement import DIVIDED, DUPLICATED, effective_placement, is_workload, reschedule_requested


class Trigger(StrEnum):
    PLACEMENT_CHANGED = "PlacementChanged"
    REPLICAS_CHANGED = "ReplicasChanged"
    RESCHEDULE_REQUESTED = "RescheduleRequested"
    # Non-workloads and Duplicated workloads are re-evaluated on every change.
    ALWAYS = "Always"
    CLUSTER_DELETING = "ClusterDeleting"


def applied_placement(placement: policy_pb2.Placement) -> str:
    """The annotation value recording the placement a schedule used (Karmada's JSON shape)."""
    # Most bindings share their policy's placement: encode each distinct one once.
    return _placement_json(placement.SerializeToString(deterministic=True))


@lru_cache(maxsize=1024)
def _placement_json(serialized: bytes) -> str:
    placement = policy_pb2.Placement()
    placement.ParseFromString(serialized)
    return codec.to_json(placement)


def need_schedule(binding: work_pb2.ResourceBinding | work_pb2.ClusterResourceBinding,
                  deleting_clusters: Container[str]) -> Trigger | None:
    """First match wins; None means only schedulerObservedGeneration may need catching up."""
    spec, status = binding.spec, binding.status
    applied = binding.metadata.annotations.get(APPLIED_PLACEMENT_ANNOTATION, "")
    if placement_changed(spec.placement, applied, status.scheduler_observing_affinity_name):
        return Trigger.PLACEMENT_CHANGED
    if replicas_changed(spec):
        return Trigger.REPLICAS_CHANGED
    if reschedule_requested(spec, status):
        return Trigger.RESCHEDULE_REQUESTED
    placement = effective_placement(spec.placement)
    duplicated = (not placement.HasField("replica_scheduling")
                  or placement.replica_scheduling.replica_scheduling_type == DUPLICATED)
    if not is_workload(spec) or spec.replicas == 0 or duplicated:
        return Trigger.ALWAYS
    if any(target.name in deleting_clusters for target in spec.clusters):
        return Trigger.CLUSTER_DELETING
    return None


def placement_changed(placement: policy_pb2.Placement, applied: str, observed_affinity: str) -> bool:
    """Whether the placement differs from the one the last schedule applied: in
    clusterAffinity, clusterTolerations, spreadConstraints or replicaScheduling, or — for
    clusterAffinities — in the term the binding is observed on. A missing or unreadable
    annotation counts as changed, so the next schedule rewrites it."""
    if not applied:
        return True
    if placement.cluster_affinities and not observed_affinity:
        # No term settled on yet: every pass looks for one.
        return True
    if applied == applied_placement(placement):
        return False
    try:
        before = codec.parse_as(policy_pb2.Placement, jsonbytes.loads(applied))
    except (ValueError, codec.CodecError):
        return True
    assert isinstance(before, policy_pb2.Placement)
    if placement.cluster_affinities or before.cluster_affinities:
        if _observed_term_changed(placement, before, observed_affinity):
            return True
    return (
        not _same(placement, before, "cluster_affinity")
        or list(placement.cluster_tolerations) != list(before.cluster_tolerations)
        or list(placement.spread_constraints) != list(before.spread_constraints)
        or not _same(placement, before, "replica_scheduling")
    )


def _same(a: policy_pb2.Placement, b: policy_pb2.Placement, field: str) -> bool:
    return a.HasField(field) == b.HasField(field) and getattr(a, field) == getattr(b, field)


def _observed_term_changed(now: policy_pb2.Placement, before: policy_pb2.Placement, observed: str) -> bool:
    if not observed:
        return True
    current = next((t for t in now.cluster_affinities if t.affinity_name == observed), None)
    applied = next((t for t in before.cluster_affinities if t.affinity_name == observed), None)
    return current is None or applied is None or current != applied


def replicas_changed(spec: work_pb2.ResourceBindingSpec) -> bool:
    """Duplicated: some target does not run spec.replicas. Divided: the targets do not add
    up to spec.replicas — which is what eviction causes. No replicaScheduling: never."""
    if not spec.placement.HasField("replica_scheduling"):
        return False
    kind = effective_placement(spec.placement).replica_scheduling.replica_scheduling_type
    if kind == DUPLICATED:
        return any(target.replicas != spec.replicas for target in spec.clusters)
    if kind == DIVIDED:
        return sum(target.replicas for target in spec.clusters) != spec.replicas
    return False
