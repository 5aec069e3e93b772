"""What if some clusters failed now (capacity planning before a failure happens).

Every binding with replicas on a failed cluster is evicted from it as the taint manager
would do once its tolerations ran out, then rescheduled with the very code the scheduler
runs. The bindings are placed one after another, highest schedulePriority first, each
decision holding its new replicas against the clusters it chose, exactly as during a real
storm of reschedules: the forecast shows where capacity runs out, not just where each
binding would go alone.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from flotilla.aio.clock import RealClock
from flotilla.api.bindings import Binding
from flotilla.api.conditions import FALSE, set_condition
from flotilla.api.taints import (
    EFFECT_NO_EXECUTE,
    EFFECT_NO_SCHEDULE,
    TAINT_CLUSTER_NOT_READY,
    tolerated_indefinitely,
)
from flotilla.api.v1 import cluster_pb2, meta_pb2, policy_pb2
from flotilla.rules.scheduler_state import handled_by
from flotilla.scheduler import core
from flotilla.scheduler.capacity import CapacityLedger, replica_request
from flotilla.scheduler.framework import Framework
from flotilla.scheduler.placement import is_workload

# The taint the taint manager puts on a cluster that stopped being Ready.
FAILURE_TAINT = meta_pb2.Taint(key=TAINT_CLUSTER_NOT_READY, effect=EFFECT_NO_EXECUTE)
NOT_READY_NO_SCHEDULE = meta_pb2.Taint(key=TAINT_CLUSTER_NOT_READY, effect=EFFECT_NO_SCHEDULE)
EVICTION_REASON = "TaintUntolerated"
EVICTION_PRODUCER = "TaintManager"


@dataclass(frozen=True, slots=True)
class Forecast:
    binding: Binding
    before: list[tuple[str, int]]
    decision: core.Decision


@dataclass(frozen=True, slots=True)
class WhatIf:
    failed: list[str]
    forecasts: list[Forecast]
    unaffected: int


def tolerates_forever(placement: policy_pb2.Placement) -> bool:
    """A placement that tolerates a not-ready cluster forever is never evicted from it."""
    return tolerated_indefinitely([FAILURE_TAINT], list(placement.cluster_tolerations))


def as_failed(cluster: cluster_pb2.Cluster, now: datetime) -> cluster_pb2.Cluster:
    """The cluster as the plane sees it once it has failed: not Ready, with the not-ready taints.
    Failed clusters stay candidates, as in a real failover, so every filter judges them as it would
    then (an evicted cluster that is still Ready could otherwise take back the copy it holds)."""
    failed = cluster_pb2.Cluster()
    failed.CopyFrom(cluster)
    # Writes Ready (on a copy, as the status service would); the filters then read it with cluster_ready.
    set_condition(failed.status.conditions, "Ready", FALSE, "ClusterNotReachable", "what if it failed", now,
                  cluster.metadata.generation)
    for taint in (FAILURE_TAINT, NOT_READY_NO_SCHEDULE):
        if not any(t.key == taint.key and t.effect == taint.effect for t in failed.spec.taints):
            failed.spec.taints.append(taint)
    return failed


def evict(binding: Binding, failed: Sequence[str]) -> Binding:
    """The binding as the taint manager leaves it: failed clusters moved from spec.clusters to
    graceful eviction tasks (docs/karmada-rules.md §7.1)."""
    evicted = copy.deepcopy(binding)
    kept = [t for t in binding.spec.clusters if t.name not in failed]
    gone = [t for t in binding.spec.clusters if t.name in failed]
    del evicted.spec.clusters[:]
    evicted.spec.clusters.extend(kept)
    tasks = {task.from_cluster for task in evicted.spec.graceful_eviction_tasks}
    for target in gone:
        if target.name in tasks:
            continue
        task = evicted.spec.graceful_eviction_tasks.add(
            from_cluster=target.name, reason=EVICTION_REASON, producer=EVICTION_PRODUCER)
        if target.replicas > 0:
            task.replicas = target.replicas
    return evicted


def what_if(bindings: Iterable[Binding], clusters: Iterable[cluster_pb2.Cluster], failed: Sequence[str],
            framework: Framework, now: datetime, scheduler_name: str,
            empty_workload_propagation: bool = False, multiple_pod_templates: bool = False) -> WhatIf:
    ledger = CapacityLedger(RealClock(), ttl=math.inf)
    failed_set = set(failed)
    snapshot = core.Snapshot.of([as_failed(c, now) if c.metadata.name in failed_set else c for c in clusters],
                                now, ledger)
    forecasts: list[Forecast] = []
    unaffected = 0
    ordered = sorted(bindings, key=lambda b: (-b.spec.schedule_priority.priority, b.kind, b.metadata.namespace,
                                              b.metadata.name))
    for binding in ordered:
        if (not handled_by(binding, scheduler_name)
                or not any(t.name in failed_set for t in binding.spec.clusters)
                or tolerates_forever(binding.spec.placement)):
            unaffected += 1
            continue
        evicted = evict(binding, failed)
        decision = core.schedule(evicted, snapshot, framework, empty_workload_propagation, multiple_pod_templates)
        if decision.ok and decision.clusters is not None:
            request = replica_request(binding.spec) if is_workload(binding.spec) else None
            ledger.record(f"{binding.kind}/{binding.metadata.namespace}/{binding.metadata.name}",
                          {t.name: t.replicas for t in evicted.spec.clusters}, dict(decision.clusters), request)
        forecasts.append(Forecast(binding, [(t.name, t.replicas) for t in binding.spec.clusters], decision))
    return WhatIf(sorted(failed_set), forecasts, unaffected)
