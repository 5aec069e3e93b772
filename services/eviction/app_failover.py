"""The application failover controller (docs/karmada-rules.md §12.1): evicts a binding from a
cluster where its application stays Unhealthy while the cluster is Ready. ResourceBindings and
ClusterResourceBindings alike.

A pass reads the binding from the informer cache and the clusters' readiness from theirs, asks
`application.decide`, and writes at most once:
- the spec, when a cluster is evicted or an eviction-history entry is past
  blockPredecessorSeconds: one compare-and-swap moving the clusters into graceful eviction tasks
  (producer ApplicationFailover, reason ApplicationFailure) and updating the history;
- otherwise the status, when the unhealthy-since records changed.
The other write, if any, is the next pass's: each write comes back through the informer. It
then returns when to look again: the earliest moment a decision can change by time alone
(a timer running out, a delay ending, a history entry expiring), never a polling interval.

The unhealthy-since records live in the binding's status, so a restarted controller continues
each timer where it stood.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace

from opentelemetry import trace
from opentelemetry.context import Context

from flotilla.aio.clock import Clock
from flotilla.api.bindings import Binding, cached
from flotilla.api.clusters import cluster_ready
from flotilla.api.keys import object_key
from flotilla.api.v1 import cluster_pb2, work_pb2
from flotilla.api.wellknown import TRACEPARENT_ANNOTATION
from flotilla.rules.eviction_tasks import StateNotCollected
from flotilla.runtime.controller import Result
from flotilla.runtime.metrics import count_eviction
from flotilla.runtime.tracecontext import context_from, failover_attributes, traceparent
from flotilla.store import ObjectStore
from flotilla.store.base import copy_of
from flotilla.store.events import EventRecorder
from flotilla.store.informer import Informer
from services.eviction.application import Decision, GateDisabled, Gates, decide, evict
from services.eviction.templates import template_of

log = logging.getLogger(__name__)

EVENT_SUCCEEDED = "EvictWorkloadFromClusterSucceed"
EVENT_FAILED = "EvictWorkloadFromClusterFailed"



@dataclass(frozen=True)
class ApplicationFailoverConfig:
    enabled: bool = True  # feature gate Failover
    gates: Gates = field(default_factory=Gates)


def ready_clusters(clusters: Informer[cluster_pb2.Cluster], binding: Binding) -> dict[str, bool]:
    ready = {}
    for target in binding.spec.clusters:
        cluster = clusters.get(target.name)
        ready[target.name] = cluster is not None and cluster_ready(cluster)
    return ready


class ApplicationFailoverReconciler:
    def __init__(self, store: ObjectStore, clock: Clock, clusters: Informer[cluster_pb2.Cluster],
                 bindings: dict[str, Informer[Binding]], config: ApplicationFailoverConfig | None = None,
                 events: EventRecorder | None = None, tracer: trace.Tracer | None = None) -> None:
        self.store = store
        self.clock = clock
        self.clusters = clusters
        self.bindings = bindings
        self.config = config or ApplicationFailoverConfig()
        self.events = events
        self.tracer = tracer or trace.get_tracer("flotilla.rules.eviction_tasks")

    async def reconcile(self, key: str) -> Result | None:
        binding = cached(self.bindings, key)
        if binding is None:
            return None
        now = self.clock.now()
        decision = decide(binding, ready_clusters(self.clusters, binding), now)
        if decision.spec_changed:
            try:
                spec = evict(binding, decision, now, self.config.gates)
            except GateDisabled as err:
                # Nothing moves until the gate is turned on (a restart brings the binding back).
                await self._warn(binding, decision, str(err))
                decision = replace(decision, evict=())
                spec = evict(binding, decision, now, self.config.gates)
            except StateNotCollected as err:
                await self._warn(binding, decision, str(err))
                raise  # retried with backoff; the status arriving brings the binding back sooner
            if spec != binding.spec:
                await self._write_spec(binding, spec, decision)
                return None
        if decision.records_changed:
            updated = copy_of(binding)
            del updated.status.application_unhealthy_since[:]
            updated.status.application_unhealthy_since.extend(decision.records)
            await self.store.update_status(updated, original=binding)
        if decision.requeue_after is None:
            return None
        return Result(requeue_after=decision.requeue_after)

    async def _write_spec(self, binding: Binding, spec: work_pb2.ResourceBindingSpec, decision: Decision) -> None:
        updated = copy_of(binding)
        updated.spec.CopyFrom(spec)
        key = object_key(binding.metadata.namespace, binding.metadata.name)
        # An eviction opens a new failover trace (stamped on the binding for the steps after it);
        # pruning the history continues the last one.
        parent = Context() if decision.evict else context_from(binding.metadata.annotations)
        with self.tracer.start_as_current_span(
            "binding.application_failover", context=parent,
            attributes=failover_attributes("evict" if decision.evict else "history-pruned",
                                           cluster=",".join(decision.evict), binding=key, kind=binding.kind,
                                           reason="ApplicationFailover"),
        ) as span:
            if decision.evict:
                updated.metadata.annotations[TRACEPARENT_ANNOTATION] = traceparent(span)
            written = await self.store.update(updated, original=binding)
        if not decision.evict:
            return
        template = template_of(binding)
        for cluster in decision.evict:
            count_eviction(cluster, binding.spec.resource)
            log.info("event=application-failover binding=%s kind=%s cluster=%s", key, binding.kind, cluster)
            message = f"Application failover: evicted the workload from cluster {cluster}, where it stayed Unhealthy."
            for obj in (written, template):
                if obj is not None and self.events is not None:
                    await self.events.normal(obj, EVENT_SUCCEEDED, message)

    async def _warn(self, binding: Binding, decision: Decision, why: str) -> None:
        if self.events is None:
            return
        for cluster in decision.evict:
            await self.events.warning(binding, EVENT_FAILED,
                                      f"Application failover could not evict from cluster {cluster}: {why}")
