"""A scheduling decision as the API's `ScheduleDecision` message: what `flotillactl schedule` prints
offline and what the scheduler's Explain RPC answers live."""

from __future__ import annotations

from flotilla.api.bindings import Binding
from flotilla.api.v1 import scheduler_pb2
from flotilla.scheduler import core
from flotilla.scheduler.placement import is_workload


def decision_message(binding: Binding, decision: core.Decision, trigger: str = "",
                     live: bool = False) -> scheduler_pb2.ScheduleDecision:
    """The decision as the CLI shows it; `live` adds the binding's current spec.clusters."""
    message = scheduler_pb2.ScheduleDecision(
        error="" if decision.ok else decision.message,
        reason=decision.outcome.value,
        affinity_name=decision.affinity_name or "",
        trigger=trigger,
        workload=is_workload(binding.spec),
    )
    for name, replicas in decision.clusters if decision.clusters is not None else []:
        message.clusters.add(name=name, replicas=replicas)
    for unfit in sorted(decision.unfit):
        message.filtered.add(cluster=unfit.cluster, plugin=unfit.plugin, reason=unfit.reason)
    if live:
        message.current.extend(binding.spec.clusters)
    return message
