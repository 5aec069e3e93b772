"""A Cluster's lifecycle (docs/karmada-rules.md §4.2): the finalizer while it lives, and an orderly
removal when it is unjoined.

Deletion: the cluster's Works are deleted (the execution controller's
finalizers hold them until the member objects are gone); once no Work is
left and no binding still targets the cluster, its credentials Secret and
then its finalizer are removed, and the Cluster disappears.
"""

from __future__ import annotations

import logging

from flotilla.api import registry
from flotilla.api.bindings import BINDING_KINDS, Binding
from flotilla.api.keys import execution_namespace, split_key
from flotilla.api.registry import ResourceType
from flotilla.api.v1 import cluster_pb2
from flotilla.api.wellknown import CLUSTER_FINALIZER, CLUSTER_SECRET_NAMESPACE
from flotilla.rules.cluster_secrets import SECRET_TYPE
from flotilla.runtime.controller import Result
from flotilla.store import NotFound, ObjectStore
from flotilla.store.informer import Informer

log = logging.getLogger(__name__)


class ClusterLifecycleReconciler:
    def __init__(self, store: ObjectStore, clusters: Informer[cluster_pb2.Cluster],
                 deletion_poll: float = 10.0) -> None:
        self.store = store
        self.clusters = clusters
        self.deletion_poll = deletion_poll

    async def reconcile(self, key: str) -> Result | None:
        _, name = split_key(key)
        cluster = self.clusters.get(key)
        if cluster is None:
            return None
        if not cluster.metadata.HasField("deletion_timestamp"):
            if CLUSTER_FINALIZER not in cluster.metadata.finalizers:
                await self.store.mutate(registry.CLUSTER, "", name, _add_finalizer)
            return None
        if CLUSTER_FINALIZER not in cluster.metadata.finalizers:
            return None
        if await self._still_in_use(name):
            return Result(requeue_after=self.deletion_poll)
        ref = cluster.spec.secret_ref
        if ref.name:
            try:
                await self.store.delete(SECRET_TYPE, ref.namespace or CLUSTER_SECRET_NAMESPACE, ref.name)
            except NotFound:
                pass
        try:
            await self.store.mutate(registry.CLUSTER, "", name, _remove_finalizer)
        except NotFound:
            return None
        log.info("event=cluster-removed cluster=%s", name)
        return None

    async def _still_in_use(self, name: str) -> bool:
        listed = await self.store.list(registry.WORK, execution_namespace(name))
        works = listed.items
        for work in works:
            if not work.metadata.HasField("deletion_timestamp"):
                try:
                    await self.store.delete(registry.WORK, work.metadata.namespace, work.metadata.name)
                except NotFound:
                    continue
        # A value that does not decode may be a Work in its namespace, or a binding on it.
        if works or listed.undecodable:
            return True
        for binding_kind in BINDING_KINDS:
            kind: ResourceType[Binding] = binding_kind.resource_type
            bindings = await self.store.list(kind)
            if bindings.undecodable or any(target.name == name for b in bindings.items for target in b.spec.clusters):
                return True
        return False


def _add_finalizer(cluster: cluster_pb2.Cluster) -> bool:
    if CLUSTER_FINALIZER in cluster.metadata.finalizers or cluster.metadata.HasField("deletion_timestamp"):
        return False
    cluster.metadata.finalizers.append(CLUSTER_FINALIZER)
    return True


def _remove_finalizer(cluster: cluster_pb2.Cluster) -> bool:
    if CLUSTER_FINALIZER not in cluster.metadata.finalizers:
        return False
    cluster.metadata.finalizers.remove(CLUSTER_FINALIZER)
    return True
