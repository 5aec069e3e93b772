"""The taint manager's wiring: informers, its controllers and the event routing between them (see
routing.py), on a Manager.

A plain class, so tests run it in-process with a store and a clock, stop it at
any moment, and start a fresh one as a restarted service would.

Two parts, which one process runs together or a service divides: SHARED, the per-binding work
every replica does for its buckets of bindings (`owns`, flotilla.runtime.sharing): NoExecute
eviction; LEADER, what must be single: each cluster's taints, and admitting clusters to be
evicted from at mass-failure protection's fleet-wide rate (cluster_admission.py), which the
replicas read from the records the leader writes (admissions.py).
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from opentelemetry import trace

from flotilla.aio.clock import Clock
from flotilla.api import bindings, registry
from flotilla.api.bindings import Binding, keys_by_index
from flotilla.api.events import EventType, WatchEvent
from flotilla.api.v1 import cluster_pb2
from flotilla.runtime.controller import Controller
from flotilla.runtime.manager import Manager
from flotilla.runtime.sharing import Owned, binding_keys_in_bucket, index_binding_buckets
from flotilla.store.base import StoreBase
from flotilla.store.errors import Undecodable
from flotilla.store.events import EventRecorder
from flotilla.store.informer import Informer
from services.taint_manager import routing
from services.taint_manager.admissions import AdmissionRecords, Stored
from services.taint_manager.cluster_admission import ClusterAdmissionReconciler
from services.taint_manager.cluster_taints import ClusterTaintReconciler, TaintConfig
from services.taint_manager.evictor import BindingEvictionReconciler, EvictorConfig, EvictorState
from services.taint_manager.protection import EvictionProtection
from services.taint_manager.taint_times import TaintTimes
from services.taint_manager.tolerations import needs_no_evicting

SHARED, LEADER = "shared", "leader"


class TaintManager:
    def __init__(self, store: StoreBase, clock: Clock, protection: EvictionProtection, taint_config: TaintConfig,
                 evictor_config: EvictorConfig, workers: int = 32, events: EventRecorder | None = None,
                 tracer: trace.Tracer | None = None, state: EvictorState | None = None,
                 manager: Manager | None = None, parts: Collection[str] = (SHARED, LEADER),
                 owns: Callable[[str], bool] | None = None, admissions: AdmissionRecords | None = None,
                 taint_times: TaintTimes | None = None) -> None:
        self.protection = protection
        self.state = state or EvictorState()
        self.manager = manager = manager or Manager(store, clock)
        self.clusters = manager.informer(registry.CLUSTER)
        self.bindings: dict[str, Informer[Binding]] = {
            kind.kind: manager.informer(kind.resource_type) for kind in bindings.BINDING_KINDS}
        for informer in self.bindings.values():
            informer.add_indexer(routing.CLUSTER_INDEX, routing.index_by_cluster)
        # Read by both parts; watched by the shared part (every replica runs it), or here when
        # this part is alone in its process.
        if admissions is None or SHARED in parts:
            self.admissions = admissions or AdmissionRecords(store)
            manager.add_runnable("admission-records", self.admissions.run)
        else:
            self.admissions = admissions
        # When this process's taints were written, shared by the taint writer and the evictor.
        self.times = taint_times or TaintTimes()
        self._unsubscribe: list[Callable[[], None]] = []
        self.shared: list[Controller] = []
        if SHARED in parts:
            self._add_shared(store, clock, evictor_config, workers, events, tracer, owns)
        if LEADER in parts:
            self._add_leader(store, clock, taint_config, events)

    def _add_shared(self, store: StoreBase, clock: Clock, config: EvictorConfig, workers: int,
                    events: EventRecorder | None, tracer: trace.Tracer | None,
                    owns: Callable[[str], bool] | None) -> None:
        """NoExecute eviction, per binding, for the buckets `owns` holds."""
        manager = self.manager
        self.evictions = reconciler = BindingEvictionReconciler(
            store, clock, self.clusters, self.bindings, self.protection, self.admissions, config, events, tracer,
            self.state, self.times)
        self.evictor = manager.controller("binding-eviction", reconciler if owns is None else Owned(reconciler, owns),
                                          workers=workers, eviction=True)
        self._protection_changed = False
        # Before the watches below: they read what it decided.
        manager.on_event(self.clusters, self._observe_protection)
        manager.watch(self.clusters, routing.bindings_on_cluster(self.bindings), self.evictor,
                      predicate=routing.eviction_inputs_changed)
        # Protection lifted or tightened: the evictions it held back get another look.
        manager.watch(self.clusters, routing.held_evictions(self.state), self.evictor,
                      predicate=lambda _: self._protection_changed)
        for kind, informer in self.bindings.items():
            manager.watch(informer, routing.binding(kind), self.evictor,
                          predicate=routing.binding_inputs_changed(self.state))
        # The leader answered about a cluster: its bindings that waited get another look.
        self._unsubscribe.append(self.admissions.on_change(self._answered))
        self.shared = [self.evictor]
        index_binding_buckets(self.bindings)

    def _add_leader(self, store: StoreBase, clock: Clock, config: TaintConfig, events: EventRecorder | None) -> None:
        """Each cluster's taints, and the answers to the replicas' requests for admission."""
        manager = self.manager
        policies = manager.informer(registry.CLUSTER_TAINT_POLICY)
        self.taints = manager.controller("cluster-taints", ClusterTaintReconciler(
            store, clock, self.clusters, policies, config, events, self.times), workers=4)
        manager.watch(self.clusters, routing.cluster_name, self.taints, predicate=routing.not_deleted)
        manager.watch(policies, routing.every_cluster(self.clusters), self.taints)
        self.admission = manager.controller("cluster-admission", ClusterAdmissionReconciler(
            clock, self.clusters, self.admissions, self.protection, events), workers=1)
        manager.watch(self.clusters, routing.cluster_name, self.admission, predicate=routing.admission_inputs_changed)
        # Protection's state changed: every cluster with a record may be decided otherwise.
        manager.watch(self.clusters, routing.clusters_with_records(self.admissions), self.admission,
                      predicate=routing.protection_inputs_changed)
        admission = self.admission
        self._unsubscribe.append(self.admissions.on_change(lambda cluster, _: admission.enqueue(cluster)))
        manager.add_runnable("admission-replay", self._replay_admissions)

    def binding_keys(self, bucket: str) -> list[str]:
        """Every binding key in the bucket the shared controllers may be given."""
        return binding_keys_in_bucket(self.bindings, bucket)

    def _answered(self, cluster: str, stored: Stored | None) -> None:
        self.evictions.record_changed(cluster)
        if routing.answers(stored):
            for key in keys_by_index(self.bindings, routing.CLUSTER_INDEX, cluster):
                self.evictor.enqueue(key)

    async def _replay_admissions(self) -> None:
        """A new leader looks at every record, those of clusters gone while no leader ran too."""
        await self.admissions.synced.wait()
        for cluster in self.admissions.clusters():
            self.admission.enqueue(cluster)

    def _observe_protection(self, event: WatchEvent[cluster_pb2.Cluster]) -> None:
        if not routing.protection_inputs_changed(event):
            # Most Cluster events are status collections: a look at every cluster for each of
            # them would be a large share of this service's work at a hundred members.
            self._protection_changed = False
            return
        if event.type is EventType.DELETED or needs_no_evicting(event.obj):
            self.protection.release(event.obj.metadata.name)
        # A cluster stored but never readable is missing from the list: not all there are.
        self._protection_changed = self.protection.observe(
            self.clusters.list(), complete=self.clusters.synced and not self.clusters.unknown())

    def admitted(self) -> list[str]:
        """The clusters whose records admit their current failure."""
        return self.admissions.admitted(lambda name: cached_cluster(self.clusters, name))

    def detach(self) -> None:
        """This part ended: it hears no more records, and holds nothing back."""
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe.clear()
        self.state.release_all()

    async def run(self) -> None:
        """Until cancelled."""
        try:
            await self.manager.run()
        finally:
            self.detach()


def cached_cluster(clusters: Informer[cluster_pb2.Cluster], name: str) -> cluster_pb2.Cluster | None:
    try:
        return clusters.get(name)
    except Undecodable:
        return None
