"""ClusterTaintPolicy (docs/karmada-rules.md §5, Karmada >= v1.14): taints added or removed when cluster
conditions match.

Policies apply in creationTimestamp order to one working copy of the taints:
for each policy whose targetClusters match, add its taints when addOnConditions
match (keeping existing ones as they are), then remove them when
removeOnConditions match. Deleting a policy removes nothing it added.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from google.protobuf.internal.containers import RepeatedCompositeFieldContainer

from flotilla.api.selectors import cluster_affinity_matches
from flotilla.api.v1 import cluster_pb2, meta_pb2, policy_pb2


def conditions_match(conditions: Sequence[policy_pb2.MatchCondition], cluster: cluster_pb2.Cluster) -> bool:
    """ANDed; an empty list never matches; a condition type the cluster lacks never matches."""
    if not conditions:
        return False
    present = {c.type: c.status for c in cluster.status.conditions}
    for match in conditions:
        status = present.get(match.condition_type)
        if status is None:
            return False
        if match.operator == "In":
            if status not in match.status_values:
                return False
        elif match.operator == "NotIn":
            if status in match.status_values:
                return False
        else:
            return False
    return True


def ordered(policies: Iterable[policy_pb2.ClusterTaintPolicy]) -> list[policy_pb2.ClusterTaintPolicy]:
    return sorted(policies, key=lambda p: (p.metadata.creation_timestamp.ToNanoseconds(), p.metadata.name))


def apply_policies(
    taints: RepeatedCompositeFieldContainer[meta_pb2.Taint], cluster: cluster_pb2.Cluster,
    policies: Iterable[policy_pb2.ClusterTaintPolicy], now: datetime,
) -> bool:
    """Edit the repeated Taint field in place; returns whether anything changed."""
    changed = False
    for policy in ordered(policies):
        spec = policy.spec
        if spec.HasField("target_clusters") and not cluster_affinity_matches(spec.target_clusters, cluster):
            continue
        if conditions_match(spec.add_on_conditions, cluster):
            present = {(t.key, t.effect) for t in taints}
            for wanted in spec.taints:
                if (wanted.key, wanted.effect) not in present:
                    added = taints.add(key=wanted.key, value=wanted.value, effect=wanted.effect)
                    added.time_added.FromDatetime(now.replace(tzinfo=None, microsecond=0))
                    present.add((wanted.key, wanted.effect))
                    changed = True
        if conditions_match(spec.remove_on_conditions, cluster):
            drop = {(t.key, t.effect) for t in spec.taints}
            for i in reversed(range(len(taints))):
                if (taints[i].key, taints[i].effect) in drop:
                    del taints[i]
                    changed = True
    return changed
