"""ClusterEviction: a cluster the workload is being evicted from (a graceful eviction task) is
no place to put it back; nor, for blockPredecessorSeconds, is a cluster application failover
moved it away from.

Except when the task holds the only running copy (nothing else is placed) and the cluster can
take the workload again: then the task no longer protects anything, and keeping the cluster out
would leave the workload placed nowhere for good (`placement.returning_clusters`).
"""

from __future__ import annotations

from flotilla.api.taints import EFFECT_NO_EXECUTE, tolerated_indefinitely
from flotilla.api.v1 import policy_pb2
from flotilla.scheduler.plugin_api import SUCCESS, BindingInfo, ClusterInfo, Result

EVICTING = Result.unschedulable("cluster(s) is in the process of eviction")
BLOCKED = Result.unschedulable("cluster(s) recently failed this application (blockPredecessorSeconds)")


class ClusterEviction:
    name = "ClusterEviction"

    def filter(self, binding: BindingInfo, cluster: ClusterInfo) -> Result:
        if cluster.name in binding.evicting and not (
                cluster.name in binding.returning and can_take_back(binding.placement, cluster)):
            return EVICTING
        if cluster.name in binding.blocked:
            return BLOCKED
        return SUCCESS


def can_take_back(placement: policy_pb2.Placement, cluster: ClusterInfo) -> bool:
    """Whether a cluster the workload was evicted from may run it again: Ready, not being deleted,
    and without a NoExecute taint the placement does not tolerate for good. A taint tolerated for
    a while still counts: placed back, the workload would be evicted again when the toleration
    ran out, and again after that."""
    if not cluster.ready or cluster.deleting:
        return False
    no_execute = [taint for taint in cluster.taints if taint.effect == EFFECT_NO_EXECUTE]
    return tolerated_indefinitely(no_execute, list(placement.cluster_tolerations))
