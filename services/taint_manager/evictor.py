"""NoExecute eviction of bindings (docs/karmada-rules.md §7), ResourceBinding and ClusterResourceBinding alike.

Per binding: every target cluster with NoExecute taints is assessed against the
binding's tolerations; the clusters due now (and admitted by mass-failure
protection, whose leader-written records admissions.py reads) leave the binding
in one compare-and-swap, made on a fresh read; the binding is looked at again
exactly when its next toleration runs out, or once the leader admits its cluster.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import datetime

from opentelemetry import trace
from opentelemetry.context import Context
from prometheus_client import Counter, Gauge

from flotilla.aio.clock import Clock
from flotilla.api import registry
from flotilla.api.bindings import Binding, cached, parse_binding_key
from flotilla.api.clusters import cluster_ready
from flotilla.api.registry import ResourceType
from flotilla.api.taints import (
    EFFECT_NO_EXECUTE,
    TAINT_CLUSTER_NOT_READY,
    TAINT_CLUSTER_TERMINATING,
    TAINT_CLUSTER_UNREACHABLE,
)
from flotilla.api.v1 import cluster_pb2
from flotilla.api.wellknown import TRACE_OPENED_FOR_ANNOTATION, TRACEPARENT_ANNOTATION
from flotilla.rules.eviction_tasks import (
    EvictionOptions,
    graceful_evict_cluster,
    placement_of,
    preserved_state,
    purge_mode_for,
    remove_cluster,
)
from flotilla.rules.failover_history import refresh
from flotilla.runtime.controller import Result
from flotilla.runtime.metrics import count_eviction
from flotilla.runtime.tracecontext import context_from, failover_attributes, span_ns, traceparent
from flotilla.store import NotFound, ObjectStore, Undecodable
from flotilla.store.events import EventRecorder
from flotilla.store.informer import Informer
from services.taint_manager.admissions import HELD as HELD_RECORD
from services.taint_manager.admissions import WAITING, AdmissionRecords, admits
from services.taint_manager.protection import Admission, EvictionProtection
from services.taint_manager.taint_times import TaintTimes
from services.taint_manager.tolerations import LATER, NOW, assess_cluster

log = logging.getLogger(__name__)

HELD = Counter("flotilla_taint_manager_evictions_held_total",
               "Evictions held back by mass-failure protection", ["reason"])
# The counter above counts each time a pass holds an eviction back; a hold that lasts (every
# cluster down, nothing changing) makes no further passes. This is how many are held now: the
# FlotillaEvictionsHeld alert (docs/alerts.md).
HELD_NOW = Gauge("flotilla_taint_manager_held_evictions",
                 "Evictions (binding, cluster) mass-failure protection holds back now")

@dataclass(frozen=True)
class EvictorConfig:
    enabled: bool = True  # --enable-no-execute-taint-eviction
    graceful_eviction: bool = True  # feature gate GracefulEviction
    state_preservation: bool = False  # feature gate StatefulFailoverInjection
    default_purge_mode: str = "Gracefully"  # --no-execute-taint-eviction-purge-mode


@dataclass
class Pending:
    binding: str
    cluster: str
    at: datetime


@dataclass
class Held:
    binding: str
    cluster: str
    reason: str


@dataclass
class EvictorState:
    """For inspection: what is waiting, and what protection holds back."""

    pending: dict[str, list[Pending]] = field(default_factory=dict)
    held: dict[str, list[Held]] = field(default_factory=dict)

    def hold(self, held: Held) -> None:
        self.held.setdefault(held.binding, []).append(held)
        HELD_NOW.inc()

    def release(self, key: str) -> None:
        HELD_NOW.dec(len(self.held.pop(key, ())))

    def release_all(self) -> None:
        """The term ended: a standby holds nothing back, and the next term decides afresh."""
        for key in list(self.held):
            self.release(key)


# Taints the taint manager itself manages: their failovers start where the status service opens them.
_CONDITION_TAINT_KEYS = frozenset({TAINT_CLUSTER_NOT_READY, TAINT_CLUSTER_UNREACHABLE, TAINT_CLUSTER_TERMINATING})


def user_taint_signature(cluster: cluster_pb2.Cluster) -> str:
    """The newest NoExecute taint a user put on a Ready cluster, as `key:effect@timeAdded`; "" if none."""
    if not cluster_ready(cluster):
        return ""
    taints = [t for t in cluster.spec.taints if t.effect == EFFECT_NO_EXECUTE and t.key not in _CONDITION_TAINT_KEYS]
    if not taints:
        return ""
    newest = max(taints, key=lambda t: t.time_added.ToNanoseconds())
    return f"{newest.key}:{newest.effect}@{newest.time_added.seconds}"


class BindingEvictionReconciler:
    def __init__(
        self,
        store: ObjectStore,
        clock: Clock,
        clusters: Informer[cluster_pb2.Cluster],
        bindings: dict[str, Informer[Binding]],
        protection: EvictionProtection,
        admissions: AdmissionRecords,
        config: EvictorConfig,
        events: EventRecorder | None = None,
        tracer: trace.Tracer | None = None,
        state: EvictorState | None = None,
        taint_times: TaintTimes | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.clusters = clusters
        self.bindings = bindings
        # Observed by every replica (is every cluster down?); only the leader admits clusters.
        self.protection = protection
        self.admissions = admissions
        # Clusters this replica asked the leader about, until their record changes.
        self._asked: set[str] = set()
        self.config = config
        self.events = events
        self.tracer = tracer or trace.get_tracer("flotilla.taint_manager")
        self.state = state or EvictorState()
        # When this process's taints were written, shared with the cluster-taints controller.
        self.taint_times = taint_times or TaintTimes()
        # Per cluster: the user taint whose trace this process opened, and its traceparent.
        self._user_traces: dict[str, tuple[str, str]] = {}
        self._trace_locks: dict[str, asyncio.Lock] = {}

    async def reconcile(self, key: str) -> Result | None:
        rt, namespace, name = parse_binding_key(key)
        self.state.pending.pop(key, None)
        self.state.release(key)
        binding = cached(self.bindings, key)
        if binding is None or not self.config.enabled:
            return None
        now = self.clock.now()
        due: list[str] = []
        wake: float | None = None
        tolerations = binding.spec.placement.cluster_tolerations
        for target in binding.spec.clusters:
            try:
                cluster = self.clusters.get(target.name)
            except Undecodable:
                continue  # unknown: nothing says it must be left, and the others are decided apart
            if cluster is None:
                continue
            verdict = assess_cluster(cluster, tolerations, now)
            if verdict.when == NOW:
                admission = await self._admission(cluster)
                if admission.admitted:
                    due.append(target.name)
                    continue
                HELD.labels(reason="protection" if admission.reason != WAITING else "admission").inc()
                self.state.hold(Held(key, target.name, admission.reason))
            elif verdict.when == LATER and verdict.at is not None:
                self.state.pending.setdefault(key, []).append(Pending(key, target.name, verdict.at))
                wake = _earliest(wake, (verdict.at - now).total_seconds())
        if due:
            await self._evict(rt, namespace, name, due, now)
        return Result(requeue_after=wake) if wake is not None else None

    def record_changed(self, cluster: str) -> None:
        """The cluster's admission record changed (came, was answered, or went): a binding due
        to leave it asks again if it finds none."""
        self._asked.discard(cluster)

    async def _admission(self, cluster: cluster_pb2.Cluster) -> Admission:
        """Whether mass-failure protection lets the binding leave the cluster now. Held back,
        the binding is looked at again when the cluster's record changes (controllers.py)."""
        if self.protection.everything_down:
            # Seen by this replica too: no record written before the mass failure lets it evict.
            return Admission(False, "every cluster is unhealthy: evictions are held back")
        name = cluster.metadata.name
        await self.admissions.synced.wait()
        stored = self.admissions.get(name)
        if stored is None:
            if name not in self._asked:
                self._asked.add(name)
                try:
                    await self.admissions.request(name)
                except BaseException:
                    self._asked.discard(name)
                    raise
            return Admission(False, WAITING)
        if admits(stored.record, cluster):
            return Admission(True)
        if stored.record is not None and stored.record.state == HELD_RECORD:
            return Admission(False, stored.record.reason)
        # Requested, admitted for an earlier failure of the cluster, or not a record at all.
        return Admission(False, WAITING)

    async def _evict(self, rt: ResourceType[Binding], namespace: str, name: str, clusters: list[str],
                     now: datetime) -> None:
        stamped: dict[str, str] = {}
        evicted: list[str] = []

        def change(binding: Binding) -> bool:
            evicted.clear()
            spec = binding.spec
            before = placement_of(spec)
            for cluster in clusters:
                if self.config.graceful_eviction:
                    state = preserved_state(binding, cluster) if self.config.state_preservation else {}
                    options = EvictionOptions(
                        purge_mode=purge_mode_for(spec, self.config.default_purge_mode),
                        message=f"Evicted from cluster {cluster}: its NoExecute taint is not tolerated",
                        preserved_label_state=state,
                        # §12.3: where the workload ran when it failed over; no label goes back there.
                        clusters_before_failover=tuple(t.name for t in spec.clusters) if state else (),
                        created=now, placement_before=before,
                    )
                    moved = graceful_evict_cluster(spec, cluster, options)
                else:
                    moved = remove_cluster(spec, cluster)
                if moved:
                    evicted.append(cluster)
            if evicted and stamped:
                binding.metadata.annotations[TRACEPARENT_ANNOTATION] = stamped["traceparent"]
            return bool(evicted)

        # The failover trace started where the cluster was found unhealthy continues here; a
        # NoExecute taint a user put on a healthy cluster starts one of its own.
        cluster_obj = self.clusters.get(clusters[0])
        parent = context_from(cluster_obj.metadata.annotations) if cluster_obj is not None else None
        if cluster_obj is not None and (signature := user_taint_signature(cluster_obj)):
            parent = await self._trace_user_taint(cluster_obj, signature, now)
        binding_name = f"{namespace}/{name}" if namespace else name
        self._trace_wait(parent, clusters, binding_name, rt.kind, now)
        # Started at `now`, the moment the eviction was decided: the toleration wait ends there and
        # the eviction task (and so the replicas-ready span) is stamped with it.
        with self.tracer.start_as_current_span(
            "binding.evict", context=parent, start_time=span_ns(now),
            attributes={**failover_attributes("evict", cluster=clusters[0], binding=binding_name, kind=rt.kind,
                                              reason="TaintUntolerated"),
                        "flotilla.clusters": ",".join(clusters)},
        ) as span:
            stamped["traceparent"] = traceparent(span)
            try:
                # The failover's history record goes in the same write (a placement not yet
                # decided: no destinations, no health).
                written = await self.store.mutate(rt, namespace, name, change,
                                                  status_change=lambda b: refresh(b, {}, False, now))
            except NotFound:
                return
        # The cache takes what etcd now holds: a pass that comes before the watch echoes it (the
        # cluster's next taint, the leader's admission) must not find the binding still on the
        # cluster, read it again and open another eviction span for nothing.
        await self.bindings[rt.kind].assume(written)
        if not evicted:
            return
        for cluster in evicted:
            count_eviction(cluster, written.spec.resource)
        trace_id = span.get_span_context().trace_id
        for cluster in evicted:
            log.info("event=evict cluster=%s binding=%s/%s reason=TaintUntolerated trace_id=%032x",
                     cluster, namespace, name, trace_id)
        if self.events is not None:
            await self.events.normal(written, "EvictWorkloadFromClusterSucceed",
                                     f"Evict from cluster {','.join(evicted)} succeed.")

    async def _trace_user_taint(self, cluster: cluster_pb2.Cluster, signature: str, now: datetime
                                ) -> Context | None:
        """One trace per user-added NoExecute taint: opened by the first eviction it causes, written
        onto the Cluster for the status of later steps, and shared by every binding it evicts. Its
        detect span runs from the taint (where the toleration waits start) to that eviction."""
        name = cluster.metadata.name
        if cluster.metadata.annotations.get(TRACE_OPENED_FOR_ANNOTATION) == signature:
            return context_from(cluster.metadata.annotations)
        async with self._trace_locks.setdefault(name, asyncio.Lock()):
            opened = self._user_traces.get(name)
            if opened is not None and opened[0] == signature:
                return context_from({TRACEPARENT_ANNOTATION: opened[1]})
            key, _, _ = signature.partition(":")
            end = span_ns(now)
            span = self.tracer.start_span("cluster.tainted", context=Context(), attributes=failover_attributes(
                "detect", cluster=name, reason=f"NoExecute taint {key} added by a user"),
                start_time=min(self._no_execute_added(cluster), default=end))
            span.end(end_time=end)
            stamp = traceparent(span)
            self._user_traces[name] = (signature, stamp)

            def stamp_cluster(obj: cluster_pb2.Cluster) -> bool:
                if obj.metadata.annotations.get(TRACE_OPENED_FOR_ANNOTATION) == signature:
                    return False
                obj.metadata.annotations[TRACEPARENT_ANNOTATION] = stamp
                obj.metadata.annotations[TRACE_OPENED_FOR_ANNOTATION] = signature
                return True

            try:
                stored = await self.store.mutate(registry.CLUSTER, "", name, stamp_cluster)
            except NotFound:
                return context_from({TRACEPARENT_ANNOTATION: stamp})
            # Another replica may have opened it first: every eviction joins the one on the cluster.
            annotations = stored.metadata.annotations
            if annotations.get(TRACE_OPENED_FOR_ANNOTATION) == signature and TRACEPARENT_ANNOTATION in annotations:
                self._user_traces[name] = (signature, annotations[TRACEPARENT_ANNOTATION])
                return context_from(annotations)
            return context_from({TRACEPARENT_ANNOTATION: stamp})

    def _no_execute_added(self, cluster: cluster_pb2.Cluster) -> list[int]:
        """When each NoExecute taint on the cluster was added (span timestamps)."""
        return [self.taint_times.added_ns(cluster.metadata.name, t) for t in cluster.spec.taints
                if t.effect == EFFECT_NO_EXECUTE and t.HasField("time_added")]

    def _trace_wait(self, parent: Context | None, clusters: list[str], binding: str, kind: str,
                    now: datetime) -> None:
        """The toleration wait, as a span from the NoExecute taint to this eviction."""
        if parent is None:
            return
        end = span_ns(now)
        for name in clusters:
            cluster = self.clusters.get(name)
            added = self._no_execute_added(cluster) if cluster is not None else []
            span = self.tracer.start_span("binding.toleration_wait", context=parent,
                                          start_time=min(added, default=end),
                                          attributes=failover_attributes("toleration-wait", cluster=name,
                                                                         binding=binding, kind=kind))
            span.end(end_time=end)


def _earliest(current: float | None, candidate: float) -> float:
    return candidate if current is None else min(current, candidate)
