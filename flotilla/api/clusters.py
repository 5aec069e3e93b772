"""A Cluster's readiness: its `Ready` condition read one way everywhere it only means "is it True".

Like Karmada's util.IsClusterReady (meta.IsStatusConditionTrue), the first condition of type
Ready counts. A reader that needs more (Unknown apart from False, the lastTransitionTime, the
whole condition) reads the condition itself and says why beside it.
"""

from __future__ import annotations

from flotilla.api.conditions import TRUE, get_condition
from flotilla.api.v1.cluster_pb2 import Cluster

CLUSTER_READY = "Ready"


def cluster_ready(cluster: Cluster) -> bool:
    """The cluster's Ready condition is True (a cluster not yet probed has none: not Ready)."""
    condition = get_condition(cluster.status.conditions, CLUSTER_READY)
    return condition is not None and condition.status == TRUE


def cluster_not_ready_reason(cluster: Cluster) -> str | None:
    """None when the cluster is Ready; else why not, in a few words: "no Ready condition yet", or
    the condition's status with its reason when it has one ("Ready=False, ClusterNotReachable")."""
    condition = get_condition(cluster.status.conditions, CLUSTER_READY)
    if condition is None:
        return "no Ready condition yet"
    if condition.status != TRUE:
        return f"Ready={condition.status}" + (f", {condition.reason}" if condition.reason else "")
    return None
