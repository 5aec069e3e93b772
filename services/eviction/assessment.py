"""Which graceful eviction tasks a binding keeps (docs/karmada-rules.md §9, with Flotilla's
"never lose the only copy" rules from docs/differences.md).

A pure function of the tasks, the time, the binding's scheduled clusters, their aggregated
health and whether the scheduler has caught up. The reconciler reads, calls it, and writes.

Per task, in order:
1. No creationTimestamp: it is stamped now and kept.
2. suppressDeletion true keeps it (purge mode Never); false drops it (the user confirmed).
3. Its cluster is among the scheduled clusters again (recovered and re-selected): dropped, so it
   does not block scaling back out to that cluster (Karmada #5782).
4. No placement exists (the scheduler has not caught up, or placed the replicas nowhere): a task
   whose old copy still runs is kept whatever its age, since dropping it would delete the only
   running copy (Karmada #7455). A Directly task's old copy is already gone; it ages out as usual.
4b. A Directly task is kept whatever its age while the binding's new Works still wait for an old
   copy to be deleted (the executor's DirectlyPurgePending condition): the new copy has not
   started, and dropping the task would start it without the task's preserved state.
5. At or past its gracePeriodSeconds (else the global timeout): dropped. (Karmada waits until
   strictly after; "at" lets the requeue for the deadline be the pass that drops it.)
6. Every scheduled cluster reports Healthy: dropped. Kinds with no health signal (ConfigMap,
   Secret, ...) are interpreted Healthy once applied, so their tasks complete (Karmada #4951).
7. Otherwise kept, to look again at its deadline.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from flotilla.api.v1 import work_pb2
from flotilla.rules.aggregated_status import DIRECTLY

HEALTHY = "Healthy"


class Drop(StrEnum):
    DELETION_CONFIRMED = "SuppressDeletionLifted"
    CLUSTER_RESELECTED = "ClusterReselected"
    TIMED_OUT = "GracePeriodExpired"
    REPLACED = "NewPlacementHealthy"


@dataclass(frozen=True)
class Dropped:
    task: work_pb2.GracefulEvictionTask
    why: Drop


@dataclass(frozen=True)
class Assessment:
    keep: tuple[work_pb2.GracefulEvictionTask, ...]
    dropped: tuple[Dropped, ...]
    # Clusters whose task is kept only because the scheduler placed the replicas nowhere: the
    # old copy there is the only one running. (While the scheduler has not caught up, tasks
    # wait silently: that is a moment, not a state to report.)
    blocked: tuple[str, ...]
    # The earliest moment a kept task ages out; None when none will by itself.
    next_deadline: datetime | None
    # A new task got its creationTimestamp.
    stamped: bool

    @property
    def changed(self) -> bool:
        return self.stamped or bool(self.dropped)


@dataclass(frozen=True)
class Placement:
    """What the binding's scheduling says right now."""

    clusters: Sequence[str]
    # Health per cluster from status.aggregatedStatus (a cluster missing has reported nothing).
    health: Mapping[str, str]
    # status.schedulerObservedGeneration == metadata.generation
    scheduled: bool
    # The new Works wait for a Directly-purged old copy to be deleted (rule 4b).
    purge_pending: bool = False

    @property
    def exists(self) -> bool:
        return self.scheduled and bool(self.clusters)

    @property
    def healthy(self) -> bool:
        return self.exists and all(self.health.get(c) == HEALTHY for c in self.clusters)


def assess(tasks: Sequence[work_pb2.GracefulEvictionTask], now: datetime, placement: Placement,
           timeout: timedelta) -> Assessment:
    keep: list[work_pb2.GracefulEvictionTask] = []
    dropped: list[Dropped] = []
    blocked: list[str] = []
    deadline: datetime | None = None
    stamped = False
    for original in tasks:
        task = work_pb2.GracefulEvictionTask()
        task.CopyFrom(original)
        if not task.HasField("creation_timestamp"):
            task.creation_timestamp.FromDatetime(now)
            stamped = True
        created = task.creation_timestamp.ToDatetime(tzinfo=now.tzinfo)
        expires = created + (timedelta(seconds=task.grace_period_seconds)
                             if task.HasField("grace_period_seconds") else timeout)
        why = _drop(task, placement, now, expires)
        if why is not None:
            dropped.append(Dropped(task, why))
            continue
        keep.append(task)
        if task.suppress_deletion:
            continue
        if not placement.exists and task.purge_mode not in DIRECTLY:
            if placement.scheduled:
                blocked.append(task.from_cluster)
            continue
        if _waits_for_purge(task, placement):
            continue
        deadline = expires if deadline is None else min(deadline, expires)
    return Assessment(tuple(keep), tuple(dropped), tuple(blocked), deadline, stamped)


def _drop(task: work_pb2.GracefulEvictionTask, placement: Placement, now: datetime,
          expires: datetime) -> Drop | None:
    if task.HasField("suppress_deletion"):
        return None if task.suppress_deletion else Drop.DELETION_CONFIRMED
    if placement.scheduled and task.from_cluster in placement.clusters:
        return Drop.CLUSTER_RESELECTED
    if not placement.exists and task.purge_mode not in DIRECTLY:
        return None
    if _waits_for_purge(task, placement):
        return None
    if now >= expires:
        return Drop.TIMED_OUT
    if placement.healthy:
        return Drop.REPLACED
    return None


def _waits_for_purge(task: work_pb2.GracefulEvictionTask, placement: Placement) -> bool:
    return task.purge_mode in DIRECTLY and placement.purge_pending
