"""The scheduling loop: ResourceBindings and ClusterResourceBindings (one code path, parameterised
by kind) are scheduled against the cluster informer's view of the fleet.

A pass reads the binding from the informer cache, decides whether it needs scheduling
(`need_schedule`), runs `core.schedule`, then writes spec.clusters, the applied-placement
annotation, the Scheduled condition, schedulerObservedGeneration, lastScheduledTime and the
destinations of an open failover record with one compare-and-swap (the store keeps spec and
status apart, as the Kubernetes API does, and lets a spec update carry a status change made
against the generation it writes: a failover of a thousand bindings is a thousand writes
fewer). A decision that only repeats the placement (Duplicated and non-workload bindings are
decided again on every change) writes no new lastScheduledTime: at most the generation it was
made for. A conflict means a newer version of the binding is on its way through the informer,
which schedules it again.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import operator
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from opentelemetry import trace

from flotilla.aio.clock import Clock
from flotilla.api.bindings import Binding
from flotilla.api.conditions import FALSE, TRUE, get_condition, set_condition
from flotilla.api.registry import ResourceType
from flotilla.api.v1 import meta_pb2
from flotilla.api.wellknown import APPLIED_PLACEMENT_ANNOTATION, DEFAULT_SCHEDULER, TRACEPARENT_ANNOTATION
from flotilla.rules.failover_history import refresh
from flotilla.rules.scheduler_state import SCHEDULED, handled_by
from flotilla.runtime.controller import Result
from flotilla.runtime.flags import flag
from flotilla.runtime.tracecontext import context_from, failover_attributes, traceparent
from flotilla.scheduler import core, metrics
from flotilla.scheduler.capacity import CapacityLedger, Request, replica_request
from flotilla.scheduler.framework import Framework, Unfit
from flotilla.scheduler.need_schedule import Trigger, applied_placement, need_schedule
from flotilla.scheduler.observed import observe
from flotilla.scheduler.placement import is_workload, returning_clusters
from flotilla.store import Conflict, NotFound, ObjectStore, Undecodable
from flotilla.store.base import copy_of, object_key_of
from flotilla.store.events import NORMAL, WARNING, EventQueue
from flotilla.store.informer import Informer
from services.scheduler.cluster_snapshots import ClusterView

log = logging.getLogger(__name__)

EVENT_SUCCEEDED = "ScheduleBindingSucceed"
EVENT_FAILED = "ScheduleBindingFailed"
# Clusters named per reason in the log line and on the span; the rest are counted.
NAMED_UNFIT = 5
_PLUGIN_AND_REASON = operator.attrgetter("plugin", "reason")
_CLUSTER = operator.attrgetter("cluster")


@dataclass(frozen=True)
class SchedulerOptions:
    scheduler_name: str = flag("--scheduler-name", DEFAULT_SCHEDULER)
    empty_workload_propagation: bool = flag("--enable-empty-workload-propagation", False)
    # A binding that could not be placed (nothing fits, capacity, spread, a plugin error) is tried
    # again after retry_initial seconds, twice as long after each further failure, at most
    # retry_after: what keeps it out of its clusters may be a status report that no scheduling
    # event announces (a discovery that timed out, capacity held by reservations, a stale summary).
    retry_initial: float = 1.0
    retry_after: float = flag("--unschedulable-retry-period", 30.0)
    # How long a decision's new replicas are held against their clusters (see CapacityLedger).
    reservation_ttl: float = flag("--capacity-reservation-ttl", 20.0)
    workers: int = flag("--workers", 16)
    # Feature gate MultiplePodTemplatesScheduling (alpha, off in Karmada), from --feature-gates.
    multiple_pod_templates: bool = False


def ledger_key(kind: str, key: str) -> str:
    return f"{kind}/{key}"


def placed_before(binding: Binding) -> dict[str, int]:
    """Where a decision about `binding` (the version it was made on) finds its replicas already:
    its targets, and a cluster taking back the only copy it still runs, which gains no new
    replicas to hold."""
    return returning_clusters(binding.spec, binding.status) | {t.name: t.replicas for t in binding.spec.clusters}


def held_request(binding: Binding) -> Request | None:
    """What each replica a decision places is held at in the ledger; None for what is no workload."""
    return replica_request(binding.spec) if is_workload(binding.spec) else None


# How soon a binding whose result lost a compare-and-swap is looked at again.
CONFLICT_REQUEUE_SECONDS = 0.1
# How soon a binding that waits for a cluster whose stored value does not decode is looked at
# again (the cluster's good value brings no event to a binding that is not on it yet).
UNREADABLE_CLUSTER_REQUEUE_SECONDS = 5.0


class BindingScheduler:
    """The reconciler for one binding kind."""

    def __init__(
        self,
        store: ObjectStore,
        clock: Clock,
        kind: ResourceType[Binding],
        bindings: Informer[Binding],
        clusters: ClusterView,
        framework: Framework,
        ledger: CapacityLedger,
        options: SchedulerOptions,
        events: EventQueue | None = None,
        tracer: trace.Tracer | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.kind = kind
        self.bindings = bindings
        self.clusters = clusters
        self.framework = framework
        self.ledger = ledger
        self.options = options
        self.events = events
        self.tracer = tracer or trace.get_tracer("flotilla.scheduler")
        # key -> the generation this scheduler last placed the binding at. Its own spec write
        # changes the generation too; that change needs no new decision, and the informer may
        # deliver it before the status write that records the generation as observed.
        self._settled: dict[str, int] = {}
        # Keys re-enqueued because a cluster changed: decided again even when settled.
        self._forced: set[str] = set()
        # key -> how many schedules of it failed in a row (its retry backoff).
        self._failures: dict[str, int] = {}

    def own_change(self, key: str, generation: int) -> bool:
        """Whether `generation` is the one this scheduler's last result produced."""
        return self._settled.get(key) == generation

    def force(self, key: str) -> None:
        self._forced.add(key)

    async def reconcile(self, key: str) -> Result | None:
        binding = self.bindings.get(key)
        forced = key in self._forced
        self._forced.discard(key)
        if binding is None:
            self.ledger.forget(ledger_key(self.kind.kind, key))
            self._settled.pop(key, None)
            self._failures.pop(key, None)
            return None
        if binding.metadata.HasField("deletion_timestamp") or not handled_by(binding, self.options.scheduler_name):
            return None
        generation = binding.metadata.generation
        trigger = need_schedule(binding, self.clusters.deleting)
        if trigger is Trigger.ALWAYS and self.own_change(key, generation) and not forced:
            return None
        if trigger is None:
            self._failures.pop(key, None)
            if binding.status.scheduler_observed_generation != generation and not self.own_change(key, generation):
                await self._observe_generation(binding)
                self._settled[key] = generation
            return None
        return await self._schedule(key, binding, trigger)

    async def _schedule(self, key: str, binding: Binding, trigger: Trigger) -> Result | None:
        started = time.perf_counter()
        try:
            snapshot = self.clusters.snapshot()
        except Undecodable as e:
            log.warning("event=schedule-waits binding=%s reason=UnreadableCluster error=%s", key, e)
            return Result(requeue_after=UNREADABLE_CLUSTER_REQUEUE_SECONDS)
        decision = core.schedule(binding, snapshot, self.framework, self.options.empty_workload_propagation,
                                 self.options.multiple_pod_templates)
        identity = ledger_key(self.kind.kind, key)
        previous_holds = None
        if decision.ok and decision.clusters is not None:
            # Held before the write is awaited, so decisions made meanwhile see it.
            previous_holds = self.ledger.record(identity, placed_before(binding), dict(decision.clusters),
                                                held_request(binding))
        span = self._failover_span(binding, trigger)
        try:
            current = await self._write_result(binding, decision, span, trigger)
        except (Conflict, NotFound) as e:
            # Never written: take the holds back and let the newer version be scheduled.
            self._settled.pop(key, None)
            if previous_holds is not None:
                self.ledger.undo(identity, previous_holds)
            if span is not None:
                span.set_status(trace.StatusCode.ERROR, "binding changed while being scheduled")
                span.end()
            # The newer version may differ only in status (the executor writes it all the time),
            # and such a change brings no event past `_needs_look`: look again, on the informer's
            # newer view, rather than wait for the next spec change.
            return Result(requeue_after=CONFLICT_REQUEUE_SECONDS) if isinstance(e, Conflict) else None
        if decision.ok:
            self._settled[key] = current.metadata.generation
        metrics.record_attempt(decision.ok, schedule_type(binding, trigger), time.perf_counter() - started)
        self._log(binding, trigger, decision, span)
        if span is not None:
            if not decision.ok:
                span.set_status(trace.StatusCode.ERROR, decision.message)
            span.end()
        if _news(binding, decision):
            self._record_events(current, decision)
        if decision.ok:
            self._failures.pop(key, None)
            return None
        # A failure that wrote no spec leaves the generation this scheduler last placed the binding
        # at: that must not pass for settled, or the retry (not forced by a cluster) does nothing.
        self._settled.pop(key, None)
        # Karmada requeues every failed schedule, "nothing fits" too (docs/karmada-rules.md §8.2).
        # Waiting for a scheduling event is not enough: a cluster's status (its APIs, its free
        # room) changes without one, and a fallback term that fails for a moment in a failover
        # storm would leave the binding off every cluster for good.
        metrics.incoming(metrics.SCHEDULE_ATTEMPT_FAILURE)
        return Result(requeue_after=self._backoff(key))

    def _backoff(self, key: str) -> float:
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        return retry_delay(failures, self.options.retry_initial, self.options.retry_after)

    def _failover_span(self, binding: Binding, trigger: Trigger) -> trace.Span | None:
        """Continue the failover trace the evicting component stamped on the binding."""
        parent = context_from(binding.metadata.annotations)
        if parent is None or not binding.spec.graceful_eviction_tasks:
            return None
        return self.tracer.start_span(
            "binding.reschedule",
            context=parent,
            attributes={
                **failover_attributes("reschedule", binding=object_key_of(binding), kind=self.kind.kind,
                                      reason=trigger.value),
                "flotilla.trigger": trigger.value,
                "flotilla.evicted_from": ",".join(t.from_cluster for t in binding.spec.graceful_eviction_tasks),
            },
        )

    async def _write_result(self, binding: Binding, decision: core.Decision, span: trace.Span | None,
                            trigger: Trigger) -> Binding:
        """spec.clusters, the applied-placement annotation and the Scheduled status, in one
        compare-and-swap: a reschedule is one write to the binding, not two."""
        if decision.clusters is None:
            await self._write_status(binding, decision)
            return binding
        if _repeated(binding, decision, trigger):
            # Nothing to say but a new lastScheduledTime, which nobody may wait for: a Duplicated
            # binding is decided again on every change of a cluster it may use
            # (docs/karmada-rules.md §8.1), and that stamp was a write to every such binding each
            # time a member's taints moved. (Karmada stamps every pass; only the time differs.)
            return await self._observe_repeat(binding, decision)
        updated = copy_of(binding)
        del updated.spec.clusters[:]
        for name, replicas in decision.clusters:
            target = updated.spec.clusters.add(name=name, replicas=replicas)
            for component, count in decision.components:
                target.components.add(name=component, replicas=count)
        updated.metadata.annotations[APPLIED_PLACEMENT_ANNOTATION] = applied_placement(binding.spec.placement)
        if span is not None:
            span.set_attribute("flotilla.clusters", _targets_text(decision.clusters))
            updated.metadata.annotations[TRACEPARENT_ANNOTATION] = traceparent(span)
        return await self.store.update(updated, original=binding,
                                       status_change=self._status_change(decision, self.clock.now()))

    @staticmethod
    def _status_change(decision: core.Decision, now: datetime, stamp: bool = True) -> Callable[[Binding], bool]:
        def change(binding: Binding) -> bool:
            status = binding.status
            # The generation the result was written at (a later one must be scheduled again),
            # or, for a failed decision, the one it was made for: that leaves
            # schedulerObservedGeneration alone, and this is how others know it was decided.
            generation = binding.metadata.generation
            changed = set_condition(status.conditions, SCHEDULED, TRUE if decision.ok else FALSE,
                                    decision.outcome.value, decision.message, now, generation)
            if decision.ok:
                # Karmada records the generation read before its patch and lets the next pass catch
                # up; recording the one written saves that pass and its write.
                changed = observe(binding) or changed
                seconds = int(now.timestamp())
                if stamp and status.last_scheduled_time.seconds != seconds:
                    status.last_scheduled_time.FromSeconds(seconds)
                    changed = True
            name = decision.affinity_name
            if name is not None and status.scheduler_observing_affinity_name != name:
                status.scheduler_observing_affinity_name = name
                changed = True
            if decision.ok:
                # An open failover gets its destinations in this same write.
                changed = refresh(binding, {}, True, now).changed or changed
            return changed

        return change

    async def _write_status(self, current: Binding, decision: core.Decision) -> None:
        """The Scheduled status alone, for a decision that placed nothing."""
        change = self._status_change(decision, self.clock.now())
        # Edited on a copy: `current` stays the original the store compares against.
        updated = copy_of(current)
        if not change(updated):
            return
        try:
            await self.store.update_status(updated, original=current)
        except Conflict:
            # Someone else wrote in between (the eviction controller stamping a task, say): the
            # decision stands, so the condition goes on the fresh object.
            await self.store.mutate(self.kind, current.metadata.namespace, current.metadata.name, change,
                                    status=True)

    async def _observe_repeat(self, binding: Binding, decision: core.Decision) -> Binding:
        """A repeated decision still records the generation it was made for (and the Scheduled
        condition's), so others know the binding was decided: a write only when those moved."""
        change = self._status_change(decision, self.clock.now(), stamp=False)
        updated = copy_of(binding)
        if not change(updated):
            return binding
        return await self.store.update_status(updated, original=binding)

    async def _observe_generation(self, binding: Binding) -> None:
        generation = binding.metadata.generation

        def change(obj: Binding) -> bool:
            return obj.metadata.generation == generation and observe(obj)

        with contextlib.suppress(NotFound):
            await self.store.mutate(self.kind, binding.metadata.namespace, binding.metadata.name, change, status=True)

    def _log(self, binding: Binding, trigger: Trigger, decision: core.Decision, span: trace.Span | None) -> None:
        unfit = unfit_text(decision.unfit)
        trace_id = f" trace_id={span.get_span_context().trace_id:032x}" if span is not None else ""
        if span is not None:
            span.set_attribute("flotilla.schedule.result", decision.outcome.value)
            span.set_attribute("flotilla.schedule.unfit", unfit)
        clusters = _targets_text(decision.clusters, ",") if decision.clusters is not None else "unchanged"
        log.info('event=schedule kind=%s binding=%s trigger=%s result=%s clusters=%s message="%s" unfit="%s"%s',
                 self.kind.kind, object_key_of(binding), trigger.value, decision.outcome.value, clusters,
                 decision.message, unfit, trace_id)

    def _record_events(self, binding: Binding, decision: core.Decision) -> None:
        if self.events is None:
            return
        if decision.ok:
            message = f"{decision.message} Result: {{{_targets_text(decision.clusters or [])}}}"
            event_type, reason = NORMAL, EVENT_SUCCEEDED
        else:
            message, event_type, reason = decision.message, WARNING, EVENT_FAILED
        self.events.emit(binding, event_type, reason, message)
        self.events.emit(_template_ref(binding), event_type, reason, message)


def unfit_text(unfit: Sequence[Unfit], named: int = NAMED_UNFIT) -> str:
    """One entry per plugin and reason, naming its first `named` clusters and counting the rest:
    at a hundred members a binding's schedule rules out ninety-eight, and a line naming them all
    says no more. A plugin rules clusters out in runs, taken a run at a time."""
    reasons: dict[tuple[str, str], list[str]] = {}
    for key, run in itertools.groupby(unfit, _PLUGIN_AND_REASON):
        reasons.setdefault(key, []).extend(map(_CLUSTER, run))
    entries = []
    for (plugin, reason), clusters in reasons.items():
        rest = len(clusters) - named
        listed = ",".join(clusters[:named]) + (f" and {rest} more" if rest > 0 else "")
        entries.append(f"{plugin}({reason})={listed}")
    return "; ".join(entries)


def retry_delay(failures: int, initial: float, longest: float) -> float:
    """The wait before the next try of a binding whose last `failures` + 1 schedules failed."""
    delay: float = initial * 2.0 ** min(failures, 32)
    return min(delay, longest)


def schedule_type(binding: Binding, trigger: Trigger) -> str:
    """Karmada's schedule_type: a first placement, a replica change, or anything else."""
    if not binding.spec.clusters and not binding.status.scheduler_observed_generation:
        return metrics.FIRST_SCHEDULE
    return metrics.SCALE_SCHEDULE if trigger is Trigger.REPLICAS_CHANGED else metrics.RECONCILE_SCHEDULE


def _news(binding: Binding, decision: core.Decision) -> bool:
    """Whether the decision tells a user something: new targets, or a new outcome. Repeating an
    unchanged decision (Duplicated bindings are re-evaluated on every change) makes no Event."""
    if decision.clusters is not None and not _places(binding, decision):
        return True
    condition = get_condition(binding.status.conditions, SCHEDULED)
    return condition is None or (condition.reason, condition.message) != (decision.outcome.value, decision.message)




def _repeated(binding: Binding, decision: core.Decision, trigger: Trigger) -> bool:
    """Whether a successful decision only repeats what the binding already says. Only for a pass
    made because the binding is looked at on every change (Trigger.ALWAYS): an explicit
    reschedule must move lastScheduledTime past rescheduleTriggeredAt, and a first placement
    must stamp it (the executor aggregates only scheduled bindings)."""
    if not decision.ok or decision.clusters is None or trigger is not Trigger.ALWAYS:
        return False
    if not binding.status.HasField("last_scheduled_time"):
        return False
    name = decision.affinity_name
    applied = binding.metadata.annotations.get(APPLIED_PLACEMENT_ANNOTATION)
    return (_places(binding, decision)
            and applied == applied_placement(binding.spec.placement)
            and (name is None or name == binding.status.scheduler_observing_affinity_name))


def _places(binding: Binding, decision: core.Decision) -> bool:
    """Whether spec.clusters already is the decision's placement, components included."""
    components = list(decision.components)
    return ([(t.name, t.replicas) for t in binding.spec.clusters] == decision.clusters
            and all([(c.name, c.replicas) for c in t.components] == components for t in binding.spec.clusters))


def _targets_text(targets: list[tuple[str, int]] | None, separator: str = ", ") -> str:
    return separator.join(f"{name}:{replicas}" for name, replicas in targets or [])


def _template_ref(binding: Binding) -> meta_pb2.Unstructured:
    """Enough of the resource template to hang an Event on it."""
    resource = binding.spec.resource
    ref = meta_pb2.Unstructured(api_version=resource.api_version, kind=resource.kind)
    ref.metadata.namespace, ref.metadata.name, ref.metadata.uid = resource.namespace, resource.name, resource.uid
    return ref
