"""Push clusters: probe every cluster-status-update-frequency and publish Ready (spec §3).

Level-triggered: each pass reads the cluster, probes, and writes the status
with one compare-and-swap on a fresh read if anything changed; it then asks
to be called again after the update frequency.
"""

from __future__ import annotations

import logging
from datetime import datetime

from opentelemetry import trace

from flotilla.api import registry
from flotilla.api.conditions import TRUE
from flotilla.api.keys import split_key
from flotilla.api.v1 import cluster_pb2
from flotilla.clusterstatus.clients import MemberClients
from flotilla.clusterstatus.observation import ReadyObservation
from flotilla.clusterstatus.prober import ClusterProber, StatusUpdate, persisted_ready
from flotilla.runtime.clock import Clock
from flotilla.runtime.controller import Result
from flotilla.runtime.tracecontext import TRACEPARENT_ANNOTATION, traceparent
from flotilla.store import NotFound, Store
from flotilla.store.events import EventRecorder
from flotilla.store.informer import Informer

log = logging.getLogger(__name__)
CLUSTER_FINALIZER = "karmada.io/cluster-controller"
PUSH, PULL = "Push", "Pull"


def is_pull(cluster: cluster_pb2.Cluster) -> bool:
    return cluster.spec.sync_mode == PULL


class PushStatusReconciler:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        clusters: Informer,
        prober: ClusterProber,
        clients: MemberClients,
        frequency: float,
        events: EventRecorder | None = None,
        tracer: trace.Tracer | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.clusters = clusters
        self.prober = prober
        self.clients = clients
        self.frequency = frequency
        self.events = events
        self.tracer = tracer or trace.get_tracer("flotilla.status")

    async def reconcile(self, key: str) -> Result | None:
        _, name = split_key(key)
        cluster = self.clusters.get(key)
        if cluster is None or is_pull(cluster):
            self.prober.forget(name)
            await self.clients.drop(name)
            return None
        if cluster.metadata.HasField("deletion_timestamp"):
            return None
        if CLUSTER_FINALIZER not in cluster.metadata.finalizers:
            # The lifecycle controller adds it; probing starts once it is there (spec §3 step 1).
            return Result(requeue_after=min(self.frequency, 1.0))
        update = await self.prober.probe(name, cluster.status, lambda: self.clients.get(cluster))
        await self.publish(name, update)
        return Result(requeue_after=self.frequency)

    async def publish(self, name: str, update: StatusUpdate) -> None:
        before: ReadyObservation | None = None

        def change(obj: cluster_pb2.Cluster) -> bool:
            nonlocal before
            before = persisted_ready(obj.status)
            return update.apply(obj.status)

        try:
            await self.store.mutate(registry.CLUSTER, "", name, change, status=True)
        except NotFound:
            return
        if before is not None and before.status == TRUE and update.ready.status != TRUE:
            await self._start_failover_trace(name, update)
        if before is None or before.status != update.ready.status:
            log.info("event=cluster-ready cluster=%s status=%s reason=%s", name, update.ready.status,
                     update.ready.reason)

    async def _start_failover_trace(self, name: str, update: StatusUpdate) -> None:
        """A cluster left Ready=True: open the failover trace and stamp it on the Cluster."""
        state = self.prober.state(name)
        start = state.since if state and state.since else update.now
        span = self.tracer.start_span(
            "cluster.unhealthy",
            start_time=_ns(start),
            attributes={"flotilla.cluster": name, "flotilla.reason": update.ready.reason,
                        "flotilla.step": "detect"},
        )
        span.end(end_time=_ns(update.now))
        parent = traceparent(span)

        def stamp(obj: cluster_pb2.Cluster) -> bool:
            if obj.metadata.annotations.get(TRACEPARENT_ANNOTATION) == parent:
                return False
            obj.metadata.annotations[TRACEPARENT_ANNOTATION] = parent
            return True

        try:
            cluster = await self.store.mutate(registry.CLUSTER, "", name, stamp)
        except NotFound:
            return
        trace_id = span.get_span_context().trace_id
        log.info("event=failover-detected cluster=%s reason=%s trace_id=%032x", name, update.ready.reason, trace_id)
        if self.events is not None:
            await self.events.warning(cluster, update.ready.reason, update.ready.message)


def _ns(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000_000)
