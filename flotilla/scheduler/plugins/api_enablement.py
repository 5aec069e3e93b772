"""APIEnablement: a cluster must serve the workload's kind, unless the workload already runs there."""

from __future__ import annotations

from flotilla.scheduler.plugin_api import SUCCESS, BindingInfo, ClusterInfo, Result

NO_API = Result.unschedulable("cluster(s) did not have the API resource")


class APIEnablement:
    name = "APIEnablement"

    def filter(self, binding: BindingInfo, cluster: ClusterInfo) -> Result:
        if cluster.name in binding.targets or binding.resource in cluster.api_enablements:
            return SUCCESS
        return NO_API
