"""GracefulEvictCluster (docs/karmada-rules.md §7.1) and the state a stateful failover carries over (§12.3).

Pure edits of a binding spec; the reconciler makes them in one compare-and-swap. Shared by the
taint manager (cluster failover) and the eviction service (application failover).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from flotilla.api import jsonbytes
from flotilla.api.bindings import Binding
from flotilla.api.v1 import policy_pb2, work_pb2
from flotilla.rules.jsonpath_template import extract

PRODUCER = "TaintManager"
REASON = "TaintUntolerated"
GRACEFULLY, DIRECTLY, NEVER = "Gracefully", "Directly", "Never"
# Karmada <= v1.18 spellings, still accepted.
DEPRECATED_PURGE_MODES = {"Immediately": DIRECTLY, "Graciously": GRACEFULLY}


def canonical_purge_mode(mode: str) -> str:
    return DEPRECATED_PURGE_MODES.get(mode, mode)


class StateNotCollected(Exception):
    """The evicted cluster's application status is needed but not yet known: retry later."""


@dataclass(frozen=True)
class EvictionOptions:
    purge_mode: str = GRACEFULLY
    reason: str = REASON
    message: str = ""
    producer: str = PRODUCER
    grace_period_seconds: int | None = None
    suppress_deletion: bool | None = None
    preserved_label_state: dict[str, str] = field(default_factory=dict)
    clusters_before_failover: tuple[str, ...] = ()
    # When the eviction happened: the task's creationTimestamp (else the graceful eviction
    # controller stamps it when it first sees the task).
    created: datetime | None = None
    # The placement before this failover; default: spec.clusters as this eviction finds them
    # (a caller evicting several clusters at once passes the placement before the first).
    placement_before: tuple[work_pb2.TargetCluster, ...] = ()


def purge_mode_for(spec: work_pb2.ResourceBindingSpec, default_mode: str) -> str:
    """The binding's own cluster-failover purge mode, else the service's flag."""
    if spec.HasField("failover") and spec.failover.HasField("cluster"):
        return spec.failover.cluster.purge_mode or GRACEFULLY
    return DIRECTLY if default_mode == DIRECTLY else GRACEFULLY


def preserved_state(binding: Binding, cluster: str) -> dict[str, str]:
    """Labels for the replacement, extracted from the evicted cluster's reported status."""
    spec = binding.spec
    if not (spec.HasField("failover") and spec.failover.HasField("cluster")):
        return {}
    return extract_state(binding, cluster, spec.failover.cluster.state_preservation.rules)


def extract_state(binding: Binding, cluster: str, rules: Sequence[policy_pb2.StatePreservationRule]) -> dict[str, str]:
    """Each rule's JSONPath over `cluster`'s collected status, under its alias label name."""
    if not rules:
        return {}
    item = next((a for a in binding.status.aggregated_status if a.cluster_name == cluster), None)
    if item is None or not item.status:
        raise StateNotCollected(f"the application status has not yet been collected from Cluster({cluster})")
    status = jsonbytes.loads(item.status)
    state = {}
    for rule in rules:
        value = extract(rule.json_path, status)
        if value is not None:
            state[rule.alias_label_name] = value
    return state


def graceful_evict_cluster(spec: work_pb2.ResourceBindingSpec, cluster: str, options: EvictionOptions) -> bool:
    """Move `cluster` from spec.clusters to a graceful eviction task; returns whether spec changed."""
    index = next((i for i, t in enumerate(spec.clusters) if t.name == cluster), None)
    if index is None:
        return False
    replicas = spec.clusters[index].replicas
    before = list(options.placement_before) or [_copy_target(t) for t in spec.clusters]
    del spec.clusters[index]
    if any(task.from_cluster == cluster for task in spec.graceful_eviction_tasks):
        return True
    task = spec.graceful_eviction_tasks.add(
        from_cluster=cluster, purge_mode=options.purge_mode, reason=options.reason,
        message=options.message, producer=options.producer,
    )
    if replicas > 0:
        task.replicas = replicas
    if options.grace_period_seconds is not None:
        task.grace_period_seconds = options.grace_period_seconds
    if options.suppress_deletion is not None:
        task.suppress_deletion = options.suppress_deletion
    task.preserved_label_state.update(options.preserved_label_state)
    task.clusters_before_failover.extend(options.clusters_before_failover)
    task.placement_before.extend(before)
    if options.created is not None:
        task.creation_timestamp.FromDatetime(options.created)
    return True


def placement_of(spec: work_pb2.ResourceBindingSpec) -> tuple[work_pb2.TargetCluster, ...]:
    """A copy of spec.clusters, to pass as EvictionOptions.placement_before."""
    return tuple(_copy_target(t) for t in spec.clusters)


def _copy_target(target: work_pb2.TargetCluster) -> work_pb2.TargetCluster:
    copied = work_pb2.TargetCluster()
    copied.CopyFrom(target)
    return copied


def remove_cluster(spec: work_pb2.ResourceBindingSpec, cluster: str) -> bool:
    """Eviction without GracefulEviction: the cluster just leaves spec.clusters."""
    index = next((i for i, t in enumerate(spec.clusters) if t.name == cluster), None)
    if index is None:
        return False
    del spec.clusters[index]
    return True
