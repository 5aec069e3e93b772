"""The binding controller's view of override policies: the pure override manager
(flotilla/rules/overrides.py) fed from the executor's informers of Clusters,
ClusterOverridePolicies and OverridePolicies, so building a Work reads no etcd."""

from __future__ import annotations

from typing import Any

from flotilla.api.v1 import cluster_pb2, policy_pb2
from flotilla.rules.overrides import Overridden, apply_overrides
from flotilla.store.informer import Informer
from services.executor.works import Overrider


def informer_overrider(clusters: Informer[cluster_pb2.Cluster],
                       cluster_policies: Informer[policy_pb2.ClusterOverridePolicy],
                       policies: Informer[policy_pb2.OverridePolicy]) -> Overrider:
    def override(cluster_name: str, manifest: dict[str, Any]) -> Overridden:
        cluster = clusters.get(cluster_name)
        if cluster is None:
            # A cluster gone from the cache (being unjoined): its name still selects by clusterNames.
            cluster = cluster_pb2.Cluster()
            cluster.metadata.name = cluster_name
        return apply_overrides(manifest, cluster, cluster_policies.list(), policies.list())

    return override
