"""Writing a probe's decision into Cluster.status, and opening the failover trace
when a cluster leaves Ready=True (shared by the status service and the Pull agent)."""

from __future__ import annotations

import logging

from opentelemetry import trace

from flotilla.api import registry
from flotilla.api.conditions import TRUE
from flotilla.api.v1 import cluster_pb2
from flotilla.api.wellknown import TRACEPARENT_ANNOTATION
from flotilla.clusterstatus.observation import ReadyObservation
from flotilla.clusterstatus.prober import ClusterProber, CollectionUpdate, StatusUpdate, persisted_ready
from flotilla.runtime.tracecontext import DETECTED_AT_ANNOTATION, failover_attributes, span_ns, traceparent
from flotilla.store import NotFound, ObjectStore
from flotilla.store.events import EventRecorder

log = logging.getLogger(__name__)


class StatusPublisher:
    def __init__(self, store: ObjectStore, prober: ClusterProber, events: EventRecorder | None = None,
                 tracer: trace.Tracer | None = None) -> None:
        self.store = store
        self.prober = prober
        self.events = events
        self.tracer = tracer or trace.get_tracer("flotilla.status")

    async def publish(self, name: str, update: StatusUpdate) -> ReadyObservation | None:
        """Apply the update with one compare-and-swap on a fresh read; returns the Ready it replaced."""
        before: ReadyObservation | None = None

        def change(obj: cluster_pb2.Cluster) -> bool:
            nonlocal before
            before = persisted_ready(obj.status)
            return update.apply(obj.status)

        try:
            await self.store.mutate(registry.CLUSTER, "", name, change, status=True)
        except NotFound:
            return None
        if before is None or before.status != update.ready.status:
            log.info("event=cluster-ready cluster=%s status=%s reason=%s", name, update.ready.status,
                     update.ready.reason)
        if before is not None and before.status == TRUE and update.ready.status != TRUE:
            await self._start_failover_trace(name, update)
        return before

    async def publish_collected(self, name: str, update: CollectionUpdate) -> None:
        try:
            await self.store.mutate(registry.CLUSTER, "", name, lambda obj: update.apply(obj.status), status=True)
        except NotFound:
            pass

    async def _start_failover_trace(self, name: str, update: StatusUpdate) -> None:
        """A cluster left Ready=True: open the failover trace and stamp it on the Cluster."""
        state = self.prober.state(name)
        start = state.since if state and state.since else update.now
        span = self.tracer.start_span(
            "cluster.unhealthy",
            start_time=span_ns(start),
            attributes=failover_attributes("detect", cluster=name, reason=update.ready.reason),
        )
        # The probes that led here, as events at the time each was taken.
        for probe in self.prober.history(name):
            span.add_event("probe", timestamp=span_ns(probe.time), attributes={
                "flotilla.probe.online": probe.online, "flotilla.probe.healthy": probe.healthy,
                "flotilla.probe.error": probe.error, "flotilla.probe.observed": probe.observed.status,
            })
        span.end(end_time=span_ns(update.now))
        parent = traceparent(span)
        stamps = {TRACEPARENT_ANNOTATION: parent, DETECTED_AT_ANNOTATION: update.now.isoformat()}

        def stamp(obj: cluster_pb2.Cluster) -> bool:
            if all(obj.metadata.annotations.get(k) == v for k, v in stamps.items()):
                return False
            obj.metadata.annotations.update(stamps)
            return True

        try:
            cluster = await self.store.mutate(registry.CLUSTER, "", name, stamp)
        except NotFound:
            return
        log.info("event=failover-detected cluster=%s reason=%s trace_id=%032x", name, update.ready.reason,
                 span.get_span_context().trace_id)
        if self.events is not None:
            await self.events.warning(cluster, update.ready.reason, update.ready.message)
