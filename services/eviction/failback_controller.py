"""The failback controller: moves bindings back home (failback.py), never more than
maxConcurrent at once across the fleet.

One worker, so two bindings never take the last free slot together. A pass reads the binding
and the clusters from the informer caches, asks `failback.decide`, and either writes the
failback (one spec compare-and-swap: spec.clusters and the Failback tasks; the history
controller then marks the record failed back), or returns when to look again: exactly when
the stabilization window ends, never a polling interval. Waits with no deadline end with an
event: a cluster's Ready condition changing, a binding's failback finishing (a slot frees),
the binding itself changing.

The fleet-wide count is the bindings in the caches with a Failback task, plus this
controller's own writes the caches do not show yet.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from flotilla.aio.clock import Clock
from flotilla.api.bindings import Binding, cached, key_of, parse_binding_key
from flotilla.api.conditions import TRUE, get_condition
from flotilla.api.keys import object_key
from flotilla.api.v1 import cluster_pb2
from flotilla.runtime.controller import Result
from flotilla.store import Conflict, NotFound, ObjectStore
from flotilla.store.base import copy_of
from flotilla.store.events import EventRecorder
from flotilla.store.informer import Informer
from services.eviction.failback import Wait, decide, fail_back, failing_back, settings_of
from services.eviction.history_controller import scheduled

log = logging.getLogger(__name__)

EVENT_FAILBACK = "FailbackStarted"


def ready_since(cluster: cluster_pb2.Cluster | None) -> datetime | None:
    """Since when the cluster is Ready; None when it is not (or says nothing)."""
    if cluster is None:
        return None
    # Not cluster_ready: failback needs since when, the condition's lastTransitionTime.
    ready = get_condition(cluster.status.conditions, "Ready")
    if ready is None or ready.status != TRUE or not ready.HasField("last_transition_time"):
        return None
    return ready.last_transition_time.ToDatetime(tzinfo=UTC)


class FailbackReconciler:
    def __init__(self, store: ObjectStore, clock: Clock, bindings: dict[str, Informer[Binding]],
                 clusters: Informer[cluster_pb2.Cluster], events: EventRecorder | None = None) -> None:
        self.store = store
        self.clock = clock
        self.bindings = bindings
        self.clusters = clusters
        self.events = events
        # key -> resourceVersion of a failback this controller wrote, until the cache shows it.
        self._written: dict[str, int] = {}

    def others_failing_back(self, key: str) -> int:
        busy = {key_of(b) for informer in self.bindings.values() for b in informer.list() if failing_back(b.spec)}
        for written_key, version in list(self._written.items()):
            rt, namespace, name = parse_binding_key(written_key)
            cached = self.bindings[rt.kind].get(object_key(namespace, name))
            if cached is None or int(cached.metadata.resource_version or 0) >= version:
                del self._written[written_key]
            else:
                busy.add(written_key)
        busy.discard(key)
        return len(busy)

    async def reconcile(self, key: str) -> Result | None:
        binding = cached(self.bindings, key)
        if binding is None or settings_of(binding.spec) is None:
            return None
        now = self.clock.now()
        homes = {t.name for r in binding.status.failover_history for t in r.clusters_before}
        since = {name: ready_since(self.clusters.get(name)) for name in homes}
        decision = decide(binding.spec, binding.status.failover_history, scheduled(binding), since, now,
                          self.others_failing_back(key))
        if decision.why is Wait.WINDOW and decision.wait_until is not None:
            return Result(requeue_after=max((decision.wait_until - now).total_seconds(), 0.0))
        if decision.record is None:
            return None
        updated = copy_of(binding)
        leaving = fail_back(updated.spec, decision.record)
        try:
            written = await self.store.update(updated, original=binding)
        except (Conflict, NotFound):
            return None
        self._written[key] = int(written.metadata.resource_version or 0)
        home = ",".join(t.name for t in decision.record.clusters_before)
        log.info("event=failback binding=%s kind=%s to=%s leaving=%s", key, binding.kind, home, ",".join(leaving))
        if self.events is not None:
            await self.events.normal(written, EVENT_FAILBACK,
                                     f"Failing back to {home}: {decision.record.from_cluster} has been Ready "
                                     f"for the stabilization window; the copy on {', '.join(leaving)} stays "
                                     f"until the copy at home is Healthy.")
        return None
