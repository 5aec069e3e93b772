"""Collecting a Ready Push member's version, discovery, nodes and pods (docs/karmada-rules.md §3
step 5) apart from its probes: a controller of its own, so that a probe never waits for a worker
busy listing another member. At a hundred members the collections are most of the status
service's main loop, and sharing the probes' workers they would space the probes out well beyond
the period asked for (docs/performance.md, "How the health thresholds protect a loaded control
plane")."""

from __future__ import annotations

import logging

from flotilla.api.keys import split_key
from flotilla.api.v1 import cluster_pb2
from flotilla.clusterstatus.prober import ClusterProber
from flotilla.clusterstatus.publish import StatusPublisher
from flotilla.clusterstatus.push_members import PushMembers
from flotilla.member import MemberError
from flotilla.runtime.controller import Result
from flotilla.store.informer import Informer
from services.status.push import is_pull

log = logging.getLogger(__name__)


class CollectReconciler:
    def __init__(self, clusters: Informer[cluster_pb2.Cluster], prober: ClusterProber, members: PushMembers,
                 publisher: StatusPublisher) -> None:
        self.clusters = clusters
        self.prober = prober
        self.members = members
        self.publisher = publisher

    async def reconcile(self, key: str) -> Result | None:
        """Asked for by the probes when a collection is due; a failed one waits for the next."""
        _, name = split_key(key)
        cluster = self.clusters.get(key)
        if cluster is None or is_pull(cluster) or cluster.metadata.HasField("deletion_timestamp"):
            return None
        try:
            update = await self.prober.collect(await self.members.get(cluster))
        except (MemberError, ValueError) as e:  # the member did not answer; its credentials are missing
            log.info("event=cluster-collect-failed cluster=%s error=%s", name, e)
            return None
        await self.publisher.publish_collected(name, update)
        return None
