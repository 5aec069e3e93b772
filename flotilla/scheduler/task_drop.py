"""What dropping a graceful eviction task leaves for the scheduler to record.

Dropping a task is a spec change, and the scheduler looks at every generation (docs/karmada-rules.md
§8.1): a Divided workload it only records as observed; a Duplicated or non-workload binding it
decides again, and the only input of that decision the drop changed is the ClusterEviction
filter on the task's cluster (§8.6). When that cluster cannot enter the decision anyway (another
filter keeps it out, it is gone or being deleted), the decision is the one the binding already
has, and the scheduler's pass would write nothing but the new generation as observed. The
task's writer records that in its own write, one write per evicted binding fewer. The scheduler
still looks at the new generation, and writes if its decision differs after all: the built-in
filters are asked here, and a scheduler run with one of them turned off (--plugins) may differ.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from datetime import datetime
from enum import Enum

from flotilla.api.bindings import Binding
from flotilla.api.conditions import TRUE, get_condition
from flotilla.rules.scheduler_state import SCHEDULED
from flotilla.scheduler.affinities import terms_to_try
from flotilla.scheduler.binding_info import binding_info, for_cluster_affinity, for_term
from flotilla.scheduler.framework import Framework, PluginFailure
from flotilla.scheduler.need_schedule import Trigger, need_schedule
from flotilla.scheduler.observed import carry_scheduled, observe
from flotilla.scheduler.placement import effective_placement, is_workload, reschedule_requested
from flotilla.scheduler.plugin_api import ClusterInfo


class Carry(Enum):
    # The scheduler must look first: the drop may change its decision.
    NOTHING = "nothing"
    # No decision to make: schedulerObservedGeneration alone, as the scheduler would record it.
    GENERATION = "generation"
    # The same decision again: the generation, and the Scheduled condition's.
    DECISION = "decision"


def carry_after_drop(before: Binding, after: Binding, dropped: Collection[str],
                     clusters: Callable[[str], ClusterInfo | None], framework: Framework, now: datetime) -> Carry:
    """`before`: the binding as the tasks were judged on; `after`: its spec without the
    `dropped` clusters' tasks (nothing else changed); `clusters`: the fleet as known now."""
    generation = before.metadata.generation
    if before.status.scheduler_observed_generation != generation:
        return Carry.NOTHING
    deleting = {t.name for t in after.spec.clusters if (info := clusters(t.name)) is None or info.deleting}
    trigger = need_schedule(after, deleting)
    if trigger is None:
        return Carry.GENERATION
    if trigger is not Trigger.ALWAYS or deleting:
        # A target going away moves the binding whatever the tasks say.
        return Carry.NOTHING
    scheduled = get_condition(before.status.conditions, SCHEDULED)
    if scheduled is None or scheduled.status != TRUE or scheduled.observed_generation != generation:
        return Carry.NOTHING
    targets = {t.name for t in after.spec.clusters}
    for name in dropped:
        if name in targets:
            return Carry.NOTHING
        info = clusters(name)
        if info is not None and not info.deleting and not rules_out(after, info, framework, now):
            return Carry.NOTHING
    return Carry.DECISION


def rules_out(binding: Binding, cluster: ClusterInfo, framework: Framework, now: datetime) -> bool:
    """Whether the filters keep `cluster` out of the binding's next decision under the affinity
    that decision tries first: clusterAffinity, or the clusterAffinities term the binding is
    settled on (docs/karmada-rules.md §8.3). A binding placed by that term stays placed by it
    while the cluster is out."""
    spec, status = binding.spec, binding.status
    placement = effective_placement(spec.placement)
    base = binding_info(binding, placement, now)
    if placement.cluster_affinities:
        terms = terms_to_try(placement, status.scheduler_observing_affinity_name, reschedule_requested(spec, status))
        if not terms:
            return False
        info = for_term(base, terms[0], is_workload(spec))
    else:
        info = for_cluster_affinity(base, placement)
    try:
        feasible, _ = framework.filter(info, [cluster])
    except PluginFailure:
        return False
    return not feasible


def record_carry(binding: Binding, carry: Carry, now: datetime) -> bool:
    """Record `carry` on the binding about to be written at its new generation, by the
    scheduler's own rule (`flotilla.scheduler.observed`)."""
    if carry is Carry.NOTHING:
        return False
    changed = observe(binding)
    if carry is Carry.DECISION:
        changed = carry_scheduled(binding, now) or changed
    return changed
