"""Which taints the controller keeps on a cluster, from its Ready condition (docs/karmada-rules.md §4.2 and
Flotilla's decision 1: NoExecute after --failover-eviction-timeout).

The controller owns `cluster.karmada.io/{not-ready,unreachable}` with effect
NoSchedule, those keys with NoExecute while automatic NoExecute taints are on,
and `cluster.karmada.io/terminating:NoExecute`. Every other taint is left as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from google.protobuf.internal.containers import RepeatedCompositeFieldContainer

from flotilla.api.conditions import FALSE, TRUE, UNKNOWN, get_condition
from flotilla.api.taints import (
    EFFECT_NO_EXECUTE,
    EFFECT_NO_SCHEDULE,
    TAINT_CLUSTER_NOT_READY,
    TAINT_CLUSTER_TERMINATING,
    TAINT_CLUSTER_UNREACHABLE,
)
from flotilla.api.v1 import cluster_pb2, meta_pb2

TaintId = tuple[str, str]  # (key, effect)


@dataclass(frozen=True)
class TaintPlan:
    add: frozenset[TaintId]
    remove: frozenset[TaintId]
    # When the NoExecute taint falls due, for a cluster that is unhealthy but not yet long enough.
    recheck_at: datetime | None = None


def plan_condition_taints(
    cluster: cluster_pb2.Cluster,
    now: datetime,
    eviction_timeout: timedelta,
    auto_no_execute: bool,
) -> TaintPlan:
    """`auto_no_execute`: gate Failover on, timeout > 0 and no ClusterTaintPolicy in charge."""
    owned_no_execute = {(TAINT_CLUSTER_NOT_READY, EFFECT_NO_EXECUTE), (TAINT_CLUSTER_UNREACHABLE, EFFECT_NO_EXECUTE)}
    add: set[TaintId] = set()
    remove: set[TaintId] = set()
    recheck = None
    if cluster.metadata.HasField("deletion_timestamp"):
        add.add((TAINT_CLUSTER_TERMINATING, EFFECT_NO_EXECUTE))
    # Not cluster_ready: Unknown (unreachable) and False or missing (not-ready) take different taints,
    # and the NoExecute timeout runs from the lastTransitionTime.
    ready = get_condition(cluster.status.conditions, "Ready")
    status = ready.status if ready is not None else None
    if status == TRUE:
        remove |= {(TAINT_CLUSTER_NOT_READY, EFFECT_NO_SCHEDULE), (TAINT_CLUSTER_UNREACHABLE, EFFECT_NO_SCHEDULE)}
        if auto_no_execute:
            remove |= owned_no_execute
    elif status in (FALSE, UNKNOWN, None):
        key = TAINT_CLUSTER_UNREACHABLE if status == UNKNOWN else TAINT_CLUSTER_NOT_READY
        other = TAINT_CLUSTER_NOT_READY if key == TAINT_CLUSTER_UNREACHABLE else TAINT_CLUSTER_UNREACHABLE
        add.add((key, EFFECT_NO_SCHEDULE))
        remove.add((other, EFFECT_NO_SCHEDULE))
        if auto_no_execute:
            remove.add((other, EFFECT_NO_EXECUTE))
            since = ready.last_transition_time.ToDatetime(tzinfo=now.tzinfo) if ready is not None else None
            if since is not None:
                due = since + eviction_timeout
                if now >= due:
                    add.add((key, EFFECT_NO_EXECUTE))
                else:
                    recheck = due
    return TaintPlan(frozenset(add), frozenset(remove - add), recheck)


def apply_plan(taints: RepeatedCompositeFieldContainer[meta_pb2.Taint], plan: TaintPlan, now: datetime) -> bool:
    """Edit a repeated Taint field in place, keeping others' taints and existing timeAdded.

    Returns whether anything changed.
    """
    changed = False
    for i in reversed(range(len(taints))):
        if (taints[i].key, taints[i].effect) in plan.remove:
            del taints[i]
            changed = True
    present = {(t.key, t.effect) for t in taints}
    for key, effect in sorted(plan.add - present):
        taint = taints.add(key=key, effect=effect)
        taint.time_added.FromDatetime(now.replace(tzinfo=None, microsecond=0))
        changed = True
    return changed
