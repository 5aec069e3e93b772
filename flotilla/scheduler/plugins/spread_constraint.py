"""SpreadConstraint: spreading by provider, region or zone needs clusters that say which one they are in."""

from __future__ import annotations

from flotilla.scheduler.plugin_api import SUCCESS, BindingInfo, ClusterInfo, Result

NO_PROVIDER = Result.unschedulable("cluster(s) did not have provider property")
NO_REGION = Result.unschedulable("cluster(s) did not have region property")
NO_ZONES = Result.unschedulable("cluster(s) did not have zones property")


class SpreadConstraint:
    name = "SpreadConstraint"

    def filter(self, binding: BindingInfo, cluster: ClusterInfo) -> Result:
        for constraint in binding.placement.spread_constraints:
            field = constraint.spread_by_field
            if field == "provider" and not cluster.provider:
                return NO_PROVIDER
            if field == "region" and not cluster.region:
                return NO_REGION
            if field == "zone" and not cluster.zones:
                return NO_ZONES
        return SUCCESS
