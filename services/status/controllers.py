"""The status service's wiring: informers over Clusters, Leases and cluster Secrets, the Push
members' node and pod watches, the status, collection and lifecycle controllers and what each
watches (see routing.py), and the Pull-cluster health monitor, on a Manager.

A plain class, so tests run it in-process with a store and a clock, stop it at any moment,
and start a fresh one as a restarted service would.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from opentelemetry import trace

from flotilla.aio.clock import Clock
from flotilla.api import registry
from flotilla.api.wellknown import CLUSTER_SECRET_NAMESPACE
from flotilla.clusterstatus.clients import MemberClients
from flotilla.clusterstatus.prober import ClusterProber
from flotilla.clusterstatus.push_members import SUMMARY_KINDS, PushMembers
from flotilla.member.watches import MemberWatches
from flotilla.rules.cluster_secrets import SECRET_TYPE, CachedCredentials
from flotilla.runtime.flags import flag
from flotilla.runtime.manager import Manager
from flotilla.store import ObjectStore
from flotilla.store.events import EventRecorder
from services.status import metrics, routing
from services.status.collection import CollectReconciler
from services.status.health_monitor import LEASE_NAMESPACE, HealthMonitor
from services.status.lifecycle import ClusterLifecycleReconciler
from services.status.monitor import Grace
from services.status.push import PushStatusReconciler, is_pull


@dataclass(frozen=True)
class StatusOptions:
    """The flags the leader's work reads (seconds)."""

    probe_timeout: float = flag("--cluster-probe-timeout")
    status_update_frequency: float = flag("--cluster-status-update-frequency")
    collect_period: float = flag("--cluster-collect-period")
    workers: int = flag("--concurrent-cluster-syncs")
    monitor_period: float = flag("--cluster-monitor-period")
    monitor_grace: float = flag("--cluster-monitor-grace-period")
    startup_grace: float = flag("--cluster-startup-grace-period")


class StatusControllers:
    def __init__(self, store: ObjectStore, clock: Clock, prober: ClusterProber, options: StatusOptions,
                 events: EventRecorder | None = None, tracer: trace.Tracer | None = None,
                 manager: Manager | None = None) -> None:
        self.manager = manager = manager or Manager(store, clock)
        self.clusters = clusters = manager.informer(registry.CLUSTER)
        self.leases = manager.informer(registry.LEASE, namespace=LEASE_NAMESPACE)
        # Only the cluster-secret namespace: templates of kind Secret live under the same resource.
        secrets = manager.informer(SECRET_TYPE, namespace=CLUSTER_SECRET_NAMESPACE)
        credentials = CachedCredentials(store, secrets).load
        # Nodes and pods by watch, for the summaries: a connection of their own per member and kind.
        self.watch_clients = MemberClients(store, options.probe_timeout, credentials=credentials)
        watches = MemberWatches(clock, self.watch_clients.get, lambda c: not is_pull(c), _no_reaction,
                                _no_reaction, keep=SUMMARY_KINDS)
        manager.on_event(clusters, watches.on_cluster)
        manager.add_runnable("member-watches", watches.run)
        self.members = members = PushMembers(credentials, options.probe_timeout, options.status_update_frequency,
                                             options.collect_period, observe=metrics.CLUSTER_PROBE_DURATION.observe,
                                             watches=watches)
        push_reconciler = PushStatusReconciler(
            store, clusters, prober, members, options.status_update_frequency,
            lambda key: self.collect.enqueue(key), events, tracer,
        )
        self.push = manager.controller("cluster-status", push_reconciler, workers=options.workers)
        self.collect = manager.controller("cluster-collect", CollectReconciler(
            clusters, prober, members, push_reconciler.publisher,
        ), workers=options.workers)
        self.lifecycle = manager.controller("cluster-lifecycle", ClusterLifecycleReconciler(
            store, clusters, deletion_poll=options.status_update_frequency,
        ))
        self.monitor = HealthMonitor(store, clock, clusters, self.leases, Grace(
            monitor=timedelta(seconds=options.monitor_grace),
            startup=timedelta(seconds=options.startup_grace),
        ))
        manager.watch(clusters, routing.cluster_name, self.lifecycle)
        manager.watch(clusters, routing.cluster_name, self.push, predicate=routing.generation_changed)
        metrics.track_ready(manager, clusters)
        manager.add_runnable("health-monitor", lambda: self.monitor.run(options.monitor_period))

    async def run(self) -> None:
        """Until cancelled."""
        try:
            async with self.members:
                await self.manager.run()
        finally:
            await self.watch_clients.close()


def _no_reaction(*_: object) -> None:
    """A collection reads the caches when it is due; a change or a sync alone asks for none."""
