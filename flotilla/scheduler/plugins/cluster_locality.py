"""ClusterLocality: prefer the clusters the binding already uses, so a reschedule moves as little as it can."""

from __future__ import annotations

from flotilla.scheduler.plugin_api import MAX_CLUSTER_SCORE, MIN_CLUSTER_SCORE, BindingInfo, ClusterInfo


class ClusterLocality:
    name = "ClusterLocality"

    def score(self, binding: BindingInfo, cluster: ClusterInfo) -> int:
        return MAX_CLUSTER_SCORE if cluster.name in binding.targets else MIN_CLUSTER_SCORE
