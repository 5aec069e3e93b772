"""ClusterAffinity: the cluster must match the affinity in force — `clusterAffinity`, or the
`clusterAffinities` term being tried (or one of its overflow terms). Unlike the taint and API
filters, clusters the binding already uses get no exemption. Its score is always 0, as Karmada's."""

from __future__ import annotations

from collections.abc import Sequence

from flotilla.scheduler.plugin_api import MIN_CLUSTER_SCORE, SUCCESS, BindingInfo, ClusterInfo, Result

NO_MATCH = Result.unschedulable("cluster(s) did not match the placement cluster affinity constraint")


class ClusterAffinity:
    name = "ClusterAffinity"

    def prefilter(self, binding: BindingInfo, clusters: Sequence[ClusterInfo]
                  ) -> tuple[Sequence[ClusterInfo], Result] | None:
        # Overflow terms widen the set per cluster; only a plain term is narrowed at once.
        if binding.affinity is None or binding.overflow:
            return None
        return binding.affinity.select(clusters), NO_MATCH

    def filter(self, binding: BindingInfo, cluster: ClusterInfo) -> Result:
        if binding.affinity is None or binding.affinity.matches(cluster):
            return SUCCESS
        if binding.overflow and any(term.matches(cluster) for term in binding.overflow):
            return SUCCESS
        return NO_MATCH

    def score(self, binding: BindingInfo, cluster: ClusterInfo) -> int:
        return MIN_CLUSTER_SCORE
