"""Which clusters a binding's aggregatedStatus covers and what its FullyApplied condition says
of them (docs/karmada-rules.md §10), shared by the executor, which aggregates the statuses of
the binding's Works, and the eviction service, whose task drop carries what that aggregation
writes next.

Dropping a task takes its cluster out of the clusters a binding expects Works on. The
binding-status controller then writes the binding once more: the dropped cluster's item gone,
FullyApplied judged again for the new generation. When the aggregation was current before the
drop, that write changes nothing else, and the drop's own write can carry it
(`carry_aggregation`): one binding write per failed-over binding fewer, each of which every
service watching bindings receives. The executor still aggregates the new generation from the
Works and writes whatever differs after all.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from flotilla.api.bindings import Binding
from flotilla.api.conditions import get_condition, set_condition
from flotilla.api.v1 import work_pb2
from flotilla.api.wellknown import DEFAULT_SCHEDULER
from flotilla.rules.scheduler_state import handled_by, scheduler_decided

FULLY_APPLIED = "FullyApplied"
FULLY_APPLIED_SUCCESS = ("FullyAppliedSuccess", "All works have been successfully applied")
FULLY_APPLIED_FAILED = ("FullyAppliedFailed", "Failed to apply all works, see status.aggregatedStatus for details")
# `Immediately` is the pre-v1.15 spelling of `Directly`.
DIRECTLY = frozenset({"Directly", "Immediately"})


def is_directly(purge_mode: str) -> bool:
    return purge_mode in DIRECTLY


def target_clusters(spec: work_pb2.ResourceBindingSpec) -> list[tuple[str, int]]:
    """spec.clusters, then requiredBy clusters not already there (Karmada's mergeTargetClusters)."""
    targets = [(t.name, t.replicas) for t in spec.clusters]
    seen = {name for name, _ in targets}
    for snapshot in spec.required_by:
        for target in snapshot.clusters:
            if target.name not in seen:
                seen.add(target.name)
                targets.append((target.name, target.replicas))
    return targets


def expected_clusters(spec: work_pb2.ResourceBindingSpec) -> set[str]:
    """The clusters the binding has Works on: its targets, and those of its graceful tasks (a
    Directly task's Work goes at once)."""
    expected = {name for name, _ in target_clusters(spec)}
    expected.update(t.from_cluster for t in spec.graceful_eviction_tasks if not is_directly(t.purge_mode))
    return expected


def fully_applied(items: Sequence[work_pb2.AggregatedStatusItem], expected: set[str]) -> bool:
    """Every expected cluster has exactly one applied item, and no item is unexpected."""
    if not expected or len(items) != len(expected):
        return False
    return all(item.applied and item.cluster_name in expected for item in items)


def fully_applied_condition(applied: bool) -> tuple[str, str, str]:
    """(status, reason, message) of the FullyApplied condition."""
    reason, message = FULLY_APPLIED_SUCCESS if applied else FULLY_APPLIED_FAILED
    return ("True" if applied else "False"), reason, message


def set_fully_applied(binding: Binding, expected: set[str], now: datetime) -> bool:
    """FullyApplied judged on the binding's aggregatedStatus against its `expected_clusters`, for
    its generation; whether it changed."""
    status, reason, message = fully_applied_condition(fully_applied(binding.status.aggregated_status, expected))
    return set_condition(binding.status.conditions, FULLY_APPLIED, status, reason, message, now,
                         binding.metadata.generation)


def carry_aggregation(before: Binding, after: Binding, now: datetime) -> bool:
    """On `after` (`before` with fewer graceful tasks, about to be written at its new generation):
    aggregatedStatus without the clusters it no longer expects, and FullyApplied for it, as the
    binding-status controller would write them. Only when FullyApplied was judged for `before`'s
    generation (the items were current then); whether anything changed."""
    condition = get_condition(before.status.conditions, FULLY_APPLIED)
    if condition is None or condition.observed_generation != before.metadata.generation:
        return False
    expected = expected_clusters(after.spec)
    items = after.status.aggregated_status
    dropped = False
    for index in reversed(range(len(items))):
        if items[index].cluster_name not in expected:
            del items[index]
            dropped = True
    return set_fully_applied(after, expected, now) or dropped


def awaits_reschedule(binding: Binding) -> bool:
    """A binding just evicted from a cluster (a graceful eviction task open) whose generation the
    default scheduler has yet to decide. Its aggregation waits for that decision, which comes
    next and changes what is expected: FullyApplied judged for the generation in between would
    be read by nobody (the eviction service decides a task only once the scheduler has), and
    cost a write of the binding that every service reads. Not for a binding another scheduler
    places, whose scheduling is suspended or that no policy claims: nothing may come to end the wait."""
    return (bool(binding.spec.graceful_eviction_tasks) and handled_by(binding, DEFAULT_SCHEDULER)
            and not scheduler_decided(binding))
