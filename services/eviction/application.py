"""Application failover (docs/karmada-rules.md §12.1, the application-failover proposal): which
clusters a binding leaves because its application there stays Unhealthy, as pure functions.

`decide` reads the binding (spec.failover.application, spec.clusters, spec.gracefulEvictionTasks,
spec.activeEvictionHistory, status.aggregatedStatus, status.applicationUnhealthySince), the Ready
state of each cluster and the time, and says which clusters to evict now, the unhealthy-since
records to persist, which eviction-history entries to keep, and when a decision can next change.
`evict` makes the spec edit for the clusters it named.

The timer, one `ClusterTimestamp` per cluster in status.applicationUnhealthySince:
- `time`: when the application was first seen Unhealthy there (this episode);
- `unknown_since`: set while the timer is paused;
- `unknown_seconds`: paused time already excluded.
Unhealthy time = (unknown_since or now) - time - unknown_seconds. Only Unhealthy on a Ready
cluster advances it. Unknown health, or a cluster that is not Ready (cluster failover's job),
pauses it: neither reset nor advanced, so health oscillating Unhealthy <-> Unknown still fails
over after tolerationSeconds of Unhealthy time (Karmada #7431). Healthy resets it (the record
goes). It lives in the binding's status, so a restarted controller continues it (Karmada keeps
it in memory). Only clusters in spec.clusters without an eviction task have one.

preConditions, which the proposal specified and Karmada never built:
- `delaySeconds`: nothing is counted before the aggregated item's creationTimestamp (status
  first collected there) plus delaySeconds;
- `healthyState: Healthy`: only an application that was Healthy there at least once (`settled`)
  is counted.

`blockPredecessorSeconds`: an evicted cluster goes into spec.activeEvictionHistory, which the
scheduler's ClusterEviction filter reads, and leaves it once that many seconds have passed.
Without it (or 0) nothing is recorded: the cluster may be chosen again right away.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from google.protobuf.timestamp_pb2 import Timestamp

from flotilla.api.bindings import Binding
from flotilla.api.v1 import policy_pb2, work_pb2
from flotilla.api.wellknown import APPLICATION_FAILOVER_PRODUCER
from flotilla.rules.eviction_tasks import (
    DIRECTLY,
    GRACEFULLY,
    NEVER,
    EvictionOptions,
    canonical_purge_mode,
    extract_state,
    graceful_evict_cluster,
    placement_of,
)

HEALTHY, UNHEALTHY = "Healthy", "Unhealthy"
PRODUCER = APPLICATION_FAILOVER_PRODUCER
REASON = "ApplicationFailure"
DEFAULT_TOLERATION_SECONDS = 300
DEFAULT_GRACE_PERIOD_SECONDS = 600


class GateDisabled(Exception):
    """The purge mode needs a feature gate that is off: nothing to do until it is turned on."""


@dataclass(frozen=True)
class Gates:
    graceful_eviction: bool = True  # GracefulEviction
    state_preservation: bool = False  # StatefulFailoverInjection


@dataclass(frozen=True)
class Decision:
    # Clusters to evict now, in spec.clusters order.
    evict: tuple[str, ...]
    # The new status.applicationUnhealthySince.
    records: tuple[work_pb2.ClusterTimestamp, ...]
    records_changed: bool
    # spec.activeEvictionHistory entries still within blockPredecessorSeconds.
    history: tuple[work_pb2.EvictionHistoryItem, ...]
    history_changed: bool
    # Seconds until the earliest moment a decision can change by time alone; None: only an
    # event (health, readiness, the binding) can change it.
    requeue_after: float | None

    @property
    def spec_changed(self) -> bool:
        return bool(self.evict) or self.history_changed


def _at(ts: Timestamp, now: datetime) -> datetime:
    return ts.ToDatetime(tzinfo=now.tzinfo)


def unhealthy_for(record: work_pb2.ClusterTimestamp, now: datetime) -> timedelta:
    """The Unhealthy time the record has counted by `now`."""
    end = _at(record.unknown_since, now) if record.HasField("unknown_since") else now
    return end - _at(record.time, now) - timedelta(seconds=record.unknown_seconds)


def toleration_of(application: policy_pb2.ApplicationFailoverBehavior) -> timedelta:
    conditions = application.decision_conditions
    seconds = conditions.toleration_seconds if conditions.HasField("toleration_seconds") else DEFAULT_TOLERATION_SECONDS
    return timedelta(seconds=seconds)


def block_of(binding: Binding) -> timedelta:
    application = binding.spec.failover.application
    return timedelta(seconds=max(application.block_predecessor_seconds, 0))


def _advance(old: work_pb2.ClusterTimestamp | None, cluster: str, counting: bool,
             now: datetime) -> work_pb2.ClusterTimestamp | None:
    """The record after this observation: started, paused or resumed."""
    if old is None:
        if not counting:
            return None
        record = work_pb2.ClusterTimestamp(cluster_name=cluster)
        record.time.FromDatetime(now)
        return record
    record = work_pb2.ClusterTimestamp()
    record.CopyFrom(old)
    paused = record.HasField("unknown_since")
    if counting and paused:
        gap = now - _at(record.unknown_since, now)
        record.unknown_seconds = (timedelta(seconds=record.unknown_seconds) + max(gap, timedelta(0))).total_seconds()
        record.ClearField("unknown_since")
    elif not counting and not paused:
        record.unknown_since.FromDatetime(now)
    return record


def decide(binding: Binding, ready: Mapping[str, bool], now: datetime) -> Decision:
    spec, status = binding.spec, binding.status
    has_policy = spec.HasField("failover") and spec.failover.HasField("application")
    application = spec.failover.application
    old = {r.cluster_name: r for r in status.application_unhealthy_since}
    items = {i.cluster_name: i for i in status.aggregated_status}
    tasks = {t.from_cluster for t in spec.graceful_eviction_tasks}
    candidates = [t.name for t in spec.clusters if t.name not in tasks] if has_policy else []
    toleration = toleration_of(application)
    pre = application.pre_conditions
    delay = timedelta(seconds=pre.delay_seconds) if pre.HasField("delay_seconds") else timedelta(0)
    once_healthy = pre.healthy_state == HEALTHY

    records: list[work_pb2.ClusterTimestamp] = []
    evict: list[str] = []
    wakes: list[datetime] = []
    for cluster in candidates:
        item = items.get(cluster)
        health = item.health if item is not None else ""
        if health == HEALTHY:
            continue  # reset
        if item is not None and item.HasField("creation_timestamp") and delay:
            decide_from = _at(item.creation_timestamp, now) + delay
            if now < decide_from:
                if health == UNHEALTHY:
                    wakes.append(decide_from)
                continue
        if once_healthy and (item is None or not item.settled):
            continue
        counting = health == UNHEALTHY and ready.get(cluster, False)
        record = _advance(old.get(cluster), cluster, counting, now)
        if record is None:
            continue
        records.append(record)
        if not counting:
            continue
        due = now + (toleration - unhealthy_for(record, now))
        if now >= due:
            evict.append(cluster)
        else:
            wakes.append(due)

    block = block_of(binding) if has_policy else timedelta(0)
    history = [h for h in spec.active_eviction_history if _at(h.creation_timestamp, now) + block > now]
    wakes.extend(_at(h.creation_timestamp, now) + block for h in history)
    requeue = max((min(wakes) - now).total_seconds(), 0.0) if wakes else None
    return Decision(
        evict=tuple(evict),
        records=tuple(records),
        records_changed=records != list(status.application_unhealthy_since),
        history=tuple(history),
        history_changed=len(history) != len(spec.active_eviction_history),
        requeue_after=requeue,
    )


def evict(binding: Binding, decision: Decision, now: datetime, gates: Gates) -> work_pb2.ResourceBindingSpec:
    """The binding's spec with `decision.evict` moved into graceful eviction tasks and its
    eviction history updated. Raises GateDisabled, or StateNotCollected when state to preserve
    has not been collected from an evicted cluster yet."""
    spec = work_pb2.ResourceBindingSpec()
    spec.CopyFrom(binding.spec)
    del spec.active_eviction_history[:]
    spec.active_eviction_history.extend(decision.history)
    if not decision.evict:
        return spec
    application = spec.failover.application
    mode = canonical_purge_mode(application.purge_mode) or GRACEFULLY
    if mode in (GRACEFULLY, NEVER) and not gates.graceful_eviction:
        raise GateDisabled(f"the GracefulEviction feature gate must be enabled when purgeMode is {mode}")
    rules: Sequence[policy_pb2.StatePreservationRule] = (
        application.state_preservation.rules if gates.state_preservation else ())
    before = tuple(t.name for t in spec.clusters)
    placement_before = placement_of(spec)
    toleration = int(toleration_of(application).total_seconds())
    block = block_of(binding)
    for cluster in decision.evict:
        state = extract_state(binding, cluster, rules) if rules else {}
        graceful_evict_cluster(spec, cluster, EvictionOptions(
            purge_mode=mode if mode in (GRACEFULLY, NEVER) else DIRECTLY,
            reason=REASON, producer=PRODUCER,
            message=f"the application has been Unhealthy on cluster {cluster} for {toleration}s while the cluster "
                    f"is Ready",
            grace_period_seconds=(application.grace_period_seconds if application.HasField("grace_period_seconds")
                                  else DEFAULT_GRACE_PERIOD_SECONDS) if mode == GRACEFULLY else None,
            suppress_deletion=True if mode == NEVER else None,
            preserved_label_state=state,
            clusters_before_failover=before if rules else (),
            created=now, placement_before=placement_before,
        ))
        if block:
            for entry in [h for h in spec.active_eviction_history if h.cluster_name == cluster]:
                spec.active_eviction_history.remove(entry)
            entry = spec.active_eviction_history.add(cluster_name=cluster)
            entry.creation_timestamp.FromDatetime(now)
    return spec
