"""The failover-history controller: keeps `status.failoverHistory` of ResourceBindings and
ClusterResourceBindings alike (the rules are in history.py).

A pass reads the binding from the informer cache, asks `history.update_history` for the new
history and writes it with one status compare-and-swap when it changed. A conflict means a
newer version is on its way through the informer, which brings the binding back here. Every
record whose recovered_time this pass set is observed once in
`flotilla_failover_recovery_seconds` (a pass whose write fails observes nothing; the next one
sets it again).
"""

from __future__ import annotations

import logging

from opentelemetry import trace
from prometheus_client import Histogram

from flotilla.api.bindings import Binding, cached
from flotilla.api.v1 import work_pb2
from flotilla.runtime.clock import Clock
from flotilla.runtime.controller import Result
from flotilla.runtime.tracecontext import RTO_SECONDS, context_from, failover_attributes
from flotilla.store import Conflict, NotFound, ObjectStore
from flotilla.store.base import copy_of
from flotilla.store.informer import Informer
from services.eviction.graceful import health_of
from services.eviction.history import recovery_seconds, update_history

log = logging.getLogger(__name__)
_tracer = trace.get_tracer("flotilla.eviction")

RECOVERY_SECONDS = Histogram(
    "flotilla_failover_recovery_seconds",
    "From a cluster's eviction to every cluster of the new placement reporting Healthy",
    buckets=(1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600),
)


def scheduled(binding: Binding) -> bool:
    return binding.status.scheduler_observed_generation == binding.metadata.generation


class FailoverHistoryReconciler:
    def __init__(self, store: ObjectStore, clock: Clock, bindings: dict[str, Informer[Binding]]) -> None:
        self.store = store
        self.clock = clock
        self.bindings = bindings

    async def reconcile(self, key: str) -> Result | None:
        binding = cached(self.bindings, key)
        if binding is None:
            return None
        update = update_history(binding.status.failover_history, binding.spec, health_of(binding),
                                scheduled(binding), self.clock.now())
        if not update.changed:
            return None
        updated = copy_of(binding)
        del updated.status.failover_history[:]
        updated.status.failover_history.extend(update.history)
        try:
            await self.store.update_status(updated, original=binding)
        except (Conflict, NotFound):
            return None
        for record in update.recovered:
            seconds = recovery_seconds(record)
            if seconds is not None:
                RECOVERY_SECONDS.observe(seconds)
                _trace_recovered(binding, key, record, seconds)
                log.info("event=failover-recovered binding=%s kind=%s from=%s to=%s seconds=%.3f", key,
                         binding.kind, record.from_cluster, ",".join(record.to_clusters), seconds)
        return None


def _trace_recovered(binding: Binding, key: str, record: work_pb2.FailoverRecord, seconds: float) -> None:
    """The new placement turned Healthy: a span from the eviction to then, carrying the binding's RTO."""
    parent = context_from(binding.metadata.annotations)
    if parent is None:
        return
    kind, _, name = key.partition(":")
    attributes = failover_attributes("replicas-ready", cluster=",".join(record.to_clusters), binding=name,
                                     kind=kind, reason=record.reason)
    span = _tracer.start_span("binding.replicas_ready", context=parent, start_time=record.time.ToNanoseconds(),
                              attributes={**attributes, RTO_SECONDS: seconds,
                                          "flotilla.evicted_from": record.from_cluster})
    span.end(end_time=record.recovered_time.ToNanoseconds())
