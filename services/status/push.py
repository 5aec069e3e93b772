"""Push clusters: probe every cluster-status-update-frequency and publish Ready (docs/karmada-rules.md §3).

Level-triggered: each pass probes and, if that changes the cluster's status as
the informer has it, writes it with one compare-and-swap on a fresh read; it
then asks to be called again on the next tick of the update frequency, the same
ticks for every cluster (`until_next_probe`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta

from opentelemetry import trace

from flotilla.api.keys import split_key
from flotilla.api.v1 import cluster_pb2
from flotilla.api.wellknown import CLUSTER_FINALIZER
from flotilla.clusterstatus.prober import ClusterProber
from flotilla.clusterstatus.publish import StatusPublisher
from flotilla.clusterstatus.push_members import PushMembers
from flotilla.runtime.controller import Result
from flotilla.store import ObjectStore, StoreError
from flotilla.store.events import EventRecorder
from flotilla.store.informer import Informer
from services.status.metrics import CLUSTER_SYNC_STATUS_DURATION

log = logging.getLogger(__name__)

PUSH, PULL = "Push", "Pull"


def is_pull(cluster: cluster_pb2.Cluster) -> bool:
    return cluster.spec.sync_mode == PULL


class PushStatusReconciler:
    def __init__(
        self,
        store: ObjectStore,
        clusters: Informer[cluster_pb2.Cluster],
        prober: ClusterProber,
        members: PushMembers,
        frequency: float,
        collect: Callable[[str], None],
        events: EventRecorder | None = None,
        tracer: trace.Tracer | None = None,
    ) -> None:
        self.store = store
        self.clusters = clusters
        self.prober = prober
        self.members = members
        self.frequency = frequency
        # Hands a due collection to the collection controller (services/status/collection.py).
        self.collect = collect
        self.publisher = StatusPublisher(store, prober, events, tracer)

    async def reconcile(self, key: str) -> Result | None:
        _, name = split_key(key)
        cluster = self.clusters.get(key)
        if cluster is None or is_pull(cluster):
            self.prober.forget(name)
            return None
        if cluster.metadata.HasField("deletion_timestamp"):
            return None
        if CLUSTER_FINALIZER not in cluster.metadata.finalizers:
            # The lifecycle controller adds it; probing starts once it is there (docs/karmada-rules.md §3 step 1).
            return Result(requeue_after=min(self.frequency, 1.0))
        clock = self.prober.clock
        at = clock.now() - timedelta(seconds=since_tick(clock.monotonic(), self.frequency))
        with CLUSTER_SYNC_STATUS_DURATION.labels(name).time():
            try:
                update = await self.prober.probe(name, cluster.status, lambda: self.members.get(cluster),
                                                 collect=False, at=at)
            except StoreError as e:
                # Its Secret could not be read: the member is not probed (its Ready stays as it
                # is) until it can be, tried again at the next tick.
                log.warning("event=probe-skipped cluster=%s error=%s", name, e)
                return Result(requeue_after=until_next_probe(clock.monotonic(), self.frequency))
            # Most probes change nothing: judged against the informer's copy, they cost etcd no
            # read. A copy behind etcd only delays a write to the next probe.
            if update.changes(cluster.status):
                await self.publisher.publish(name, update)
        if update.collect_due:
            self.collect(key)
        return Result(requeue_after=until_next_probe(clock.monotonic(), self.frequency))


def since_tick(now: float, period: float) -> float:
    """How long ago the tick was that a pass at `now` (monotonic) belongs to: a probe is stamped
    with its tick, not with the moment its turn in the burst came. Stamped as it ran, a member
    failing probe after probe showed its failures a period apart give or take its place in
    each burst, and a failure threshold of three periods was passed only at the fourth, half
    the time. A pass more than half a period after a tick is off the ticks: stamped as it runs."""
    if period <= 0:
        return 0.0
    lag = now % period
    return lag if lag < period / 2 else 0.0


def until_next_probe(now: float, period: float) -> float:
    """Seconds from `now` (monotonic) to the next probe: the next multiple of `period` at least
    half a period away. Every member is probed on the same ticks, so a period's probes go out
    together, rather than each member's own period from its first probe spreading them over the
    whole period: probes in one burst cost the status service and the members less CPU than the
    same probes one at a time (the loops, caches and connections warm, one wake-up for many
    answers; docs/performance.md, "What the defaults rest on"). A member never waits more than one and
    a half periods, and only while falling into step."""
    if period <= 0:
        return period
    delay = period - now % period
    return delay + period if delay < period / 2 else delay
