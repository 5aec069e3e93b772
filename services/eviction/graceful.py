"""The graceful eviction controller (docs/karmada-rules.md §9): ages out a binding's
`spec.gracefulEvictionTasks`, ResourceBindings and ClusterResourceBindings alike.

A pass reads the binding from the informer cache, asks `assessment.assess` which tasks stay,
and writes at most once: the task list when it changed (a compare-and-swap on the cached
copy), otherwise the EvictionBlocked condition when that changed. The task list's write carries
the failover history's recovery time, and, when the drop cannot change the schedule, the new
generation as the scheduler would record it (`flotilla.scheduler.task_drop`). A conflict means a newer
version is on its way through the informer, which brings the binding back here. It then
returns when to look again: exactly the next task's deadline, never a polling interval.

Dropping a task is what lets the executor delete the old Work, and with it the member object
on the failed cluster once that cluster is reachable again.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from google.protobuf.message import Message
from opentelemetry import trace
from prometheus_client import Counter

from flotilla.aio.clock import Clock
from flotilla.api.bindings import Binding, cached, kind_of
from flotilla.api.conditions import TRUE, get_condition, is_true, remove_condition, set_condition
from flotilla.api.keys import object_key
from flotilla.api.v1 import cluster_pb2, work_pb2
from flotilla.api.wellknown import DIRECTLY_PURGE_PENDING_CONDITION
from flotilla.rules.aggregated_status import FULLY_APPLIED, carry_aggregation
from flotilla.rules.failover_history import refresh
from flotilla.rules.scheduler_state import scheduler_decided
from flotilla.runtime.controller import Result
from flotilla.runtime.tracecontext import (
    FAILOVER_RTO_SECONDS,
    context_from,
    detected_at,
    failover_attributes,
    trace_id_of,
)
from flotilla.scheduler.framework import Framework
from flotilla.scheduler.plugin_api import ClusterInfo
from flotilla.scheduler.task_drop import Carry, carry_after_drop, record_carry
from flotilla.store import ObjectStore, Undecodable
from flotilla.store.base import copy_of
from flotilla.store.events import EventRecorder
from flotilla.store.informer import Informer
from services.eviction.assessment import Assessment, Placement, assess
from services.eviction.recovery import observe_recovered
from services.eviction.templates import template_of

log = logging.getLogger(__name__)

EVICTION_BLOCKED = "EvictionBlocked"
NO_PLACEMENT = "NoPlacement"
EVENT_SUCCEEDED = "EvictWorkloadFromClusterSucceed"
# Informer index: bindings by the failovers (trace and cluster) they have a task open for.
OPEN_FAILOVERS = "open-failovers"

TASKS_DROPPED = Counter("flotilla_eviction_tasks_dropped_total", "Graceful eviction tasks dropped, by why",
                        ["reason"])


@dataclass(frozen=True)
class GracefulEvictionConfig:
    # --graceful-eviction-timeout: how long a task without gracePeriodSeconds may live.
    timeout: timedelta = timedelta(minutes=10)


def placement_of(binding: Binding) -> Placement:
    return Placement(
        clusters=[t.name for t in binding.spec.clusters],
        health=health_of(binding),
        scheduled=scheduler_decided(binding),
        purge_pending=is_true(binding.status.conditions, DIRECTLY_PURGE_PENDING_CONDITION),
    )


def health_of(binding: Binding) -> dict[str, str]:
    """Health per cluster, once the executor has aggregated it for this generation of the
    binding (its FullyApplied condition records which): before that, aggregatedStatus may
    still describe the previous placement (member2's 2 replicas, Healthy, when it now has 3)."""
    fully_applied = get_condition(binding.status.conditions, FULLY_APPLIED)
    if fully_applied is None or fully_applied.observed_generation != binding.metadata.generation:
        return {}
    return {item.cluster_name: item.health for item in binding.status.aggregated_status}


def open_failovers(binding: Binding) -> list[str]:
    """`trace-id/cluster` of every task the binding still has, in the trace it was last changed in."""
    trace_id = trace_id_of(binding.metadata.annotations)
    return [f"{trace_id}/{t.from_cluster}" for t in binding.spec.graceful_eviction_tasks] if trace_id else []


def blocked_message(clusters: tuple[str, ...]) -> str:
    return (f"the replicas evicted from {', '.join(clusters)} could not be placed on any other cluster; "
            f"the copy there keeps running until a placement exists")


class GracefulEvictionReconciler:
    def __init__(self, store: ObjectStore, clock: Clock, bindings: dict[str, Informer[Binding]],
                 config: GracefulEvictionConfig | None = None, events: EventRecorder | None = None,
                 tracer: trace.Tracer | None = None, clusters: Informer[cluster_pb2.Cluster] | None = None,
                 framework: Framework | None = None) -> None:
        self.store = store
        self.clock = clock
        self.bindings = bindings
        self.config = config or GracefulEvictionConfig()
        self.events = events
        self.tracer = tracer or trace.get_tracer("flotilla.rules.eviction_tasks")
        self.clusters = clusters
        # The built-in filters: the scheduler's are these plus any installed ones, so a cluster
        # these keep out stays out of its decisions too.
        self.framework = framework or Framework.build("*", installed={})
        for informer in bindings.values():
            informer.add_indexer(OPEN_FAILOVERS, open_failovers)

    async def reconcile(self, key: str) -> Result | None:
        binding = cached(self.bindings, key)
        if binding is None:
            return None
        now = self.clock.now()
        verdict = assess(binding.spec.graceful_eviction_tasks, now, placement_of(binding), self.config.timeout)
        if verdict.changed:
            await self._write_tasks(binding, verdict)
            # The write comes back through the informer, and the next pass plans from there.
            return None
        await self._report_blocked(binding, verdict)
        if verdict.next_deadline is None:
            return None
        return Result(requeue_after=max((verdict.next_deadline - now).total_seconds(), 0.0))

    async def _write_tasks(self, binding: Binding, verdict: Assessment) -> None:
        updated = copy_of(binding)
        del updated.spec.graceful_eviction_tasks[:]
        updated.spec.graceful_eviction_tasks.extend(verdict.keep)
        key = object_key(binding.metadata.namespace, binding.metadata.name)
        # The failover history read from the version the tasks were judged on (after the write the
        # binding has a new generation that nobody has scheduled or applied yet), written with the
        # tasks: the recovery a dropped task stands for costs no write of its own.
        now = self.clock.now()
        carry = carry_after_drop(binding, updated, [d.task.from_cluster for d in verdict.dropped],
                                 self._cluster_info, self.framework, now) if verdict.dropped else Carry.NOTHING
        recovered: list[work_pb2.FailoverRecord] = []

        def record_history(obj: Binding) -> None:
            recovered[:] = refresh(obj, health_of(binding), scheduler_decided(binding), now,
                                   spec=binding.spec).recovered
            # What the scheduler would record for the new generation, when the drop cannot
            # change its decision, and what the executor's aggregation would: their passes then
            # have nothing to write.
            record_carry(obj, carry, now)
            carry_aggregation(binding, obj, now)
        with self.tracer.start_as_current_span(
            "binding.graceful_eviction", context=context_from(binding.metadata.annotations),
            attributes=failover_attributes(
                "task-dropped", cluster=",".join(d.task.from_cluster for d in verdict.dropped), binding=key,
                kind=kind_of(binding).kind, reason=",".join(sorted({d.why.value for d in verdict.dropped}))),
        ):
            written = await self.store.update(updated, original=binding, status_change=record_history)
        observe_recovered(binding, f"{kind_of(binding).kind}:{key}", recovered)
        template = template_of(binding)
        events = []
        for dropped in verdict.dropped:
            TASKS_DROPPED.labels(reason=dropped.why.value).inc()
            cluster = dropped.task.from_cluster
            log.info("event=drop-eviction-task binding=%s kind=%s cluster=%s reason=%s",
                     key, binding.kind, cluster, dropped.why.value)
            message = f"Evict from cluster {cluster} succeed."
            events.append(self._event(written, message))
            if template is not None:
                events.append(self._event(template, message))
        # Together, not one after another: each waits for an etcd commit, and the last bindings of
        # a failover become Healthy in a burst that this pass's length drains.
        await asyncio.gather(*events)
        for dropped in verdict.dropped:
            self._close_failover_if_last(binding, dropped.task)

    def _close_failover_if_last(self, binding: Binding, task: work_pb2.GracefulEvictionTask) -> None:
        """The span that closes a failover: once no other binding of the same trace still has a
        task for the cluster, this was the last one to recover. It runs from the cluster leaving
        Ready (else this task's eviction) to now, so its duration is the whole failover's RTO.
        Two workers may both see themselves last; a second closing span is harmless."""
        trace_id = trace_id_of(binding.metadata.annotations)
        if not trace_id:
            return
        key = object_key(binding.metadata.namespace, binding.metadata.name)
        cluster = task.from_cluster
        # Looked up, not scanned: a thousand tasks dropped over ten thousand bindings would be
        # ten million comparisons.
        own_kind = kind_of(binding).kind
        for kind, informer in self.bindings.items():
            others = informer.index_keys(OPEN_FAILOVERS, f"{trace_id}/{cluster}")
            if kind == own_kind:
                others -= {key}
            if others:
                return
        now = self.clock.now()
        start = self._fault_time(cluster) or task.creation_timestamp.ToDatetime(tzinfo=now.tzinfo)
        attributes: dict[str, str | float] = {**failover_attributes("failover-closed", cluster=cluster)}
        attributes[FAILOVER_RTO_SECONDS] = round((now - start).total_seconds(), 3)
        span = self.tracer.start_span("failover.closed", context=context_from(binding.metadata.annotations),
                                      start_time=int(start.timestamp() * 1e9), attributes=attributes)
        span.end(end_time=int(now.timestamp() * 1e9))
        log.info("event=failover-closed cluster=%s rto_seconds=%s trace_id=%s", cluster,
                 attributes[FAILOVER_RTO_SECONDS], trace_id)

    def _cluster_info(self, name: str) -> ClusterInfo | None:
        cluster = self.clusters.get(name) if self.clusters is not None else None
        return ClusterInfo.from_cluster(cluster) if cluster is not None else None

    def _fault_time(self, cluster: str) -> datetime | None:
        """When the cluster left Ready, while it has not come back (None when not known)."""
        try:
            obj = self.clusters.get(cluster) if self.clusters is not None else None
        except Undecodable:
            return None  # for a trace only: the closing of the failover is not held up for it
        # Not cluster_ready: the trace needs when Ready left True (its lastTransitionTime).
        ready = get_condition(obj.status.conditions, "Ready") if obj is not None else None
        if obj is None or ready is None or ready.status == TRUE or not ready.HasField("last_transition_time"):
            return None
        # To the microsecond where the status service stamped it: the trace's other steps are.
        return detected_at(obj.metadata.annotations, ready.last_transition_time.ToDatetime(tzinfo=UTC))

    async def _report_blocked(self, binding: Binding, verdict: Assessment) -> None:
        updated = copy_of(binding)
        conditions = updated.status.conditions
        if verdict.blocked:
            message = blocked_message(verdict.blocked)
            changed = set_condition(conditions, EVICTION_BLOCKED, TRUE, NO_PLACEMENT, message, self.clock.now(),
                                    binding.metadata.generation)
            if self.events is not None:
                # Folded by the recorder into one Event with a count.
                await self.events.warning(binding, EVICTION_BLOCKED, message)
        else:
            changed = get_condition(conditions, EVICTION_BLOCKED) is not None and remove_condition(
                conditions, EVICTION_BLOCKED)
        if changed:
            await self.store.update_status(updated, original=binding)

    async def _event(self, obj: Message, message: str) -> None:
        if self.events is not None:
            await self.events.normal(obj, EVENT_SUCCEEDED, message)
