"""Failback (Karmada #7441): moving a workload back to the placement it had before a failover,
once the cluster it was evicted from has been Ready for a whole stabilization window.

Pure: `decide` says whether a binding fails back now, or until when it waits; `fail_back` is
the spec edit. Off unless `spec.failover.cluster.failback.enabled` (copied from the policy).

A binding fails back to the clusters_before of its newest record not yet failed back, when
- no graceful eviction task is on it (a failover or a failback still under way),
- the scheduler has caught up, and the record's failover has finished: the binding is still
  where that failover put it (spec.clusters == to_clusters) and that placement recovered,
- going back needs no new division (the replicas still add up: see `scheduler_keeps`),
- every cluster it returns to has been Ready (condition True, lastTransitionTime) for at least
  stabilizationWindowSeconds — exactly at the window's end counts, so the requeue for that
  moment is the pass that fails back,
- fewer than maxConcurrent bindings across the fleet are failing back (a binding fails back
  while it has a task with producer Failback).

The edit has the graceful semantics of a failover: spec.clusters becomes clusters_before and
every cluster leaving the placement gets a graceful eviction task (producer and reason
Failback, purgeMode Gracefully), so the copy away from home keeps running until the copy at
home is Healthy; the graceful eviction controller then drops the task (assessment.py).

The scheduler and a failback (flotilla/scheduler/need_schedule.py): for a Divided workload,
a spec.clusters change whose replicas still add up to spec.replicas triggers nothing — the
scheduler only records the generation as observed and keeps the placement. That is what
failback relies on, so it does NOT set spec.rescheduleTriggeredAt: an explicit reschedule
would re-divide the replicas over every feasible cluster and need not land on
clusters_before at all. A record whose clusters_before no longer adds up (the workload was
scaled since) is stale and not failed back, since the scheduler would re-divide it anyway.
Duplicated workloads and non-workloads are re-evaluated by the scheduler on every change
(Trigger.ALWAYS); for them failback can only take the away clusters out of the candidates
(ClusterEviction filters clusters with a task) while the task lasts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from flotilla.api.v1 import work_pb2
from flotilla.rules.failover_history import FAILBACK, is_failback, newest_open
from flotilla.scheduler.need_schedule import replicas_changed

DEFAULT_WINDOW_SECONDS = 600
DEFAULT_MAX_CONCURRENT = 1
GRACEFULLY = "Gracefully"


@dataclass(frozen=True)
class Settings:
    window: timedelta
    max_concurrent: int


def settings_of(spec: work_pb2.ResourceBindingSpec) -> Settings | None:
    """None unless failback is enabled on the binding."""
    failback = spec.failover.cluster.failback
    if not failback.enabled:
        return None
    window = (failback.stabilization_window_seconds if failback.HasField("stabilization_window_seconds")
              else DEFAULT_WINDOW_SECONDS)
    concurrent = failback.max_concurrent if failback.HasField("max_concurrent") else DEFAULT_MAX_CONCURRENT
    return Settings(timedelta(seconds=window), concurrent)


def failing_back(spec: work_pb2.ResourceBindingSpec) -> bool:
    return any(is_failback(t) for t in spec.graceful_eviction_tasks)


class Wait(StrEnum):
    DISABLED = "Disabled"
    BUSY = "EvictionInProgress"
    UNSCHEDULED = "SchedulerNotCaughtUp"
    NOTHING = "NothingToFailBack"
    STALE = "PlacementChangedSince"
    NOT_READY = "ClusterNotReady"
    WINDOW = "StabilizationWindow"
    AT_CAPACITY = "MaxConcurrentReached"


@dataclass(frozen=True)
class Decision:
    # The record to fail back to now; None while waiting.
    record: work_pb2.FailoverRecord | None = None
    why: Wait | None = None
    # When waiting for the window: the moment it ends.
    wait_until: datetime | None = None


def decide(spec: work_pb2.ResourceBindingSpec, history: Sequence[work_pb2.FailoverRecord], scheduled: bool,
           ready_since: Mapping[str, datetime | None], now: datetime, others_failing_back: int) -> Decision:
    """`ready_since`: per cluster, since when it is Ready (None: not Ready, or unknown);
    `others_failing_back`: the other bindings of the fleet failing back right now."""
    settings = settings_of(spec)
    if settings is None:
        return Decision(why=Wait.DISABLED)
    if spec.graceful_eviction_tasks:
        return Decision(why=Wait.BUSY)
    if not scheduled:
        return Decision(why=Wait.UNSCHEDULED)
    record = newest_open(history)
    if record is None:
        return Decision(why=Wait.NOTHING)
    current = {t.name for t in spec.clusters}
    home = [t.name for t in record.clusters_before if t.name not in current]
    if (not record.clusters_before or not record.HasField("recovered_time") or not home
            or current != set(record.to_clusters) or not scheduler_keeps(spec, record.clusters_before)):
        return Decision(why=Wait.STALE)
    since = [ready_since.get(name) for name in home]
    if any(s is None for s in since):
        return Decision(why=Wait.NOT_READY)
    ends = max(s for s in since if s is not None) + settings.window
    if now < ends:
        return Decision(why=Wait.WINDOW, wait_until=ends)
    if others_failing_back >= settings.max_concurrent:
        return Decision(why=Wait.AT_CAPACITY)
    return Decision(record=record)


def scheduler_keeps(spec: work_pb2.ResourceBindingSpec, clusters: Sequence[work_pb2.TargetCluster]) -> bool:
    """Whether `clusters` as spec.clusters adds up, so need_schedule sees no replica change."""
    after = work_pb2.ResourceBindingSpec()
    after.CopyFrom(spec)
    del after.clusters[:]
    after.clusters.extend(clusters)
    return not replicas_changed(after)


def fail_back(spec: work_pb2.ResourceBindingSpec, record: work_pb2.FailoverRecord) -> list[str]:
    """The spec edit; returns the clusters now leaving the placement."""
    home = {t.name for t in record.clusters_before}
    leaving = [t for t in spec.clusters if t.name not in home]
    del spec.clusters[:]
    spec.clusters.extend(record.clusters_before)
    for target in leaving:
        task = spec.graceful_eviction_tasks.add(
            from_cluster=target.name, purge_mode=GRACEFULLY, reason=FAILBACK, producer=FAILBACK,
            message=f"failing back to {', '.join(sorted(home))} after {record.from_cluster} recovered")
        if target.replicas > 0:
            task.replicas = target.replicas
    return [t.name for t in leaving]
