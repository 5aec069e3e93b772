"""ClusterEviction: a cluster the workload is being evicted from (a graceful eviction task) is
no place to put it back; nor, for blockPredecessorSeconds, is a cluster application failover
moved it away from."""

from __future__ import annotations

from flotilla.scheduling import SUCCESS, BindingInfo, ClusterInfo, Result

EVICTING = Result.unschedulable("cluster(s) is in the process of eviction")
BLOCKED = Result.unschedulable("cluster(s) recently failed this application (blockPredecessorSeconds)")


class ClusterEviction:
    name = "ClusterEviction"

    def filter(self, binding: BindingInfo, cluster: ClusterInfo) -> Result:
        if cluster.name in binding.evicting:
            return EVICTING
        if cluster.name in binding.blocked:
            return BLOCKED
        return SUCCESS
