"""A binding's failover history (`status.failoverHistory`): a pure function of the binding.

Everything is derived from what the binding says now, so a pass can run any number of
times, after any restart, and reach the same history:

1. Every graceful eviction task not produced by failback is one failover. A task is matched
   to its record by cluster and creation time; a task not yet stamped matches the record of
   its cluster that has no time yet (and gives it the time once stamped). A task with no
   record gets one: time, from cluster, reason, producer, and the placement before the
   failover: the task's placementBefore, which Flotilla's evictions record; for a task
   without it (written by another tool), the binding's clusters plus the evicted ones with
   the tasks' replicas, known only while the scheduler has not yet rewritten spec.clusters.
2. A record without destinations gets the binding's clusters once the scheduler has caught up
   (status.schedulerObservedGeneration == metadata.generation) with a non-empty placement.
3. A record with destinations and a time gets recovered_time the first time every destination
   reports Healthy in status.aggregatedStatus.
4. A binding with failback enabled (or a Failback task) whose placement is an open record's
   clusters_before again, not its destinations, marks that record (the newest such) failed
   back. (Failing back onto a superset of the away placement leaves no task behind.)
5. Only the last MAX_RECORDS records are kept; the oldest go first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from flotilla.api.bindings import Binding
from flotilla.api.v1 import work_pb2

MAX_RECORDS = 10
HEALTHY = "Healthy"
# Producer and reason of the tasks failback creates (services/eviction/failback.py).
FAILBACK = "Failback"


@dataclass(frozen=True)
class HistoryUpdate:
    history: tuple[work_pb2.FailoverRecord, ...]
    # Records whose recovered_time this pass set (each observed once in the histogram).
    recovered: tuple[work_pb2.FailoverRecord, ...]
    changed: bool


def is_failback(task: work_pb2.GracefulEvictionTask) -> bool:
    return task.producer == FAILBACK


def recovery_seconds(record: work_pb2.FailoverRecord) -> float | None:
    """recovered_time - time, once both are known."""
    if not (record.HasField("time") and record.HasField("recovered_time")):
        return None
    return (record.recovered_time.ToNanoseconds() - record.time.ToNanoseconds()) / 1e9


def update_history(history: Sequence[work_pb2.FailoverRecord], spec: work_pb2.ResourceBindingSpec,
                   health: Mapping[str, str], scheduled: bool, now: datetime) -> HistoryUpdate:
    """`health`: per cluster from status.aggregatedStatus; `scheduled`: the scheduler has caught up."""
    records = [_copy(r) for r in history]
    failovers = [t for t in spec.graceful_eviction_tasks if not is_failback(t)]
    new_tasks = [t for t in failovers if not _match(records, t)]
    guessed = _clusters_before(spec, new_tasks) if not scheduled else []
    for task in new_tasks:
        record = work_pb2.FailoverRecord(from_cluster=task.from_cluster, reason=task.reason, producer=task.producer)
        if task.HasField("creation_timestamp"):
            record.time.CopyFrom(task.creation_timestamp)
        # Flotilla's evictions record the placement they found on the task itself.
        record.clusters_before.extend(sorted(task.placement_before, key=lambda t: t.name) or guessed)
        records.append(record)
    placement = [t.name for t in spec.clusters]
    recovered: list[work_pb2.FailoverRecord] = []
    for record in records:
        if not record.to_clusters and scheduled and placement:
            record.to_clusters.extend(placement)
        if (record.to_clusters and record.HasField("time") and not record.HasField("recovered_time")
                and all(health.get(c) == HEALTHY for c in record.to_clusters)):
            record.recovered_time.FromDatetime(now)
            recovered.append(record)
    if spec.failover.cluster.failback.enabled or any(is_failback(t) for t in spec.graceful_eviction_tasks):
        returned = next((r for r in reversed(records) if _back_home(r, set(placement))), None)
        if returned is not None:
            returned.failed_back_time.FromDatetime(now)
    kept = tuple(records[-MAX_RECORDS:])
    return HistoryUpdate(kept, tuple(r for r in recovered if r in kept), list(kept) != list(history))


def refresh(binding: Binding, health: Mapping[str, str], scheduled: bool, now: datetime,
            spec: work_pb2.ResourceBindingSpec | None = None) -> HistoryUpdate:
    """`update_history` written into the binding's status: the one way every writer of
    `status.failoverHistory` writes it. Each writer of a failover step (the eviction, the
    placement, the task's end) brings the history up to date in its own write, so the history
    costs no write of its own; the failover-history controller, which calls this too, stays the
    backstop. `spec`: the spec the history is judged on when it is not the binding's own (a task
    drop judges the version whose tasks it drops, and writes the one without them)."""
    update = update_history(binding.status.failover_history, binding.spec if spec is None else spec,
                            health, scheduled, now)
    if update.changed:
        del binding.status.failover_history[:]
        binding.status.failover_history.extend(update.history)
    return update


def newest_open(records: Sequence[work_pb2.FailoverRecord]) -> work_pb2.FailoverRecord | None:
    """The newest record not yet failed back."""
    return next((r for r in reversed(records) if not r.HasField("failed_back_time")), None)


def _back_home(record: work_pb2.FailoverRecord, placement: set[str]) -> bool:
    """An open record whose placement before is the binding's placement again."""
    return (not record.HasField("failed_back_time") and bool(record.to_clusters) and bool(record.clusters_before)
            and _names(record.clusters_before) == placement != set(record.to_clusters))


def _match(records: list[work_pb2.FailoverRecord], task: work_pb2.GracefulEvictionTask) -> bool:
    """Whether `task` has its record already (giving an untimed record its stamp)."""
    mine = [r for r in records if r.from_cluster == task.from_cluster]
    if task.HasField("creation_timestamp") and any(
            r.HasField("time") and r.time == task.creation_timestamp for r in mine):
        return True
    untimed = next((r for r in mine if not r.HasField("time")), None)
    if untimed is None:
        return False
    if task.HasField("creation_timestamp"):
        untimed.time.CopyFrom(task.creation_timestamp)
    return True


def _clusters_before(spec: work_pb2.ResourceBindingSpec,
                     evicted: Sequence[work_pb2.GracefulEvictionTask]) -> list[work_pb2.TargetCluster]:
    before = [_copy_target(t) for t in spec.clusters]
    names = {t.name for t in before}
    for task in evicted:
        if task.from_cluster not in names:
            before.append(work_pb2.TargetCluster(name=task.from_cluster, replicas=task.replicas))
            names.add(task.from_cluster)
    return sorted(before, key=lambda t: t.name)


def _names(targets: Sequence[work_pb2.TargetCluster]) -> set[str]:
    return {t.name for t in targets}


def _copy(record: work_pb2.FailoverRecord) -> work_pb2.FailoverRecord:
    copied = work_pb2.FailoverRecord()
    copied.CopyFrom(record)
    return copied


def _copy_target(target: work_pb2.TargetCluster) -> work_pb2.TargetCluster:
    copied = work_pb2.TargetCluster()
    copied.CopyFrom(target)
    return copied
