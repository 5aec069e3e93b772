"""TaintToleration: a NoSchedule or NoExecute taint the placement does not tolerate keeps new
workloads off a cluster. Clusters the binding already uses pass: evicting from them is the
taint manager's job, with its grace periods, not the scheduler's."""

from __future__ import annotations

from flotilla.api.taints import EFFECT_NO_EXECUTE, EFFECT_NO_SCHEDULE, tolerations_tolerate_taint
from flotilla.api.v1.meta_pb2 import Taint
from flotilla.scheduler.plugin_api import SUCCESS, BindingInfo, ClusterInfo, Result

_EFFECTS = (EFFECT_NO_SCHEDULE, EFFECT_NO_EXECUTE)


def describe(taint: Taint) -> str:
    """`{key=value:Effect}`, or `{key:Effect}` for a taint without a value."""
    return f"{{{taint.key}={taint.value}:{taint.effect}}}" if taint.value else f"{{{taint.key}:{taint.effect}}}"


class TaintToleration:
    name = "TaintToleration"

    def filter(self, binding: BindingInfo, cluster: ClusterInfo) -> Result:
        if not cluster.taints or cluster.name in binding.targets:
            return SUCCESS
        tolerations = binding.placement.cluster_tolerations
        for taint in cluster.taints:
            if taint.effect in _EFFECTS and not tolerations_tolerate_taint(tolerations, taint):
                return Result.unschedulable(f"cluster(s) had untolerated taint {describe(taint)}")
        return SUCCESS
