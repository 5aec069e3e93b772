"""Push members as the status service's prober reads them: health from the probe thread, the
collection from this loop, credentials from a cache, and nodes and pods from watches of each
Ready member (`flotilla.member.watches`, keeping only what the summaries read) once they have
listed: a member's every pod listed at every collection would be most of what the status service
and the simulator do at a hundred members (docs/performance.md, "What the defaults rest on").
Until its watches have listed, a member's nodes and pods are listed at each collection."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from flotilla.api.v1 import cluster_pb2
from flotilla.clusterstatus.member_http import MemberReader, MemberSession
from flotilla.clusterstatus.probe_thread import ProbeThread
from flotilla.member import Credentials, Health
from flotilla.member.summary import summarized_node, summarized_pod
from flotilla.member.watches import Kind, KindCache, MemberWatches

NODES: Kind = ("v1", "Node")
PODS: Kind = ("v1", "Pod")
# What the status service's watches keep of each object.
SUMMARY_KINDS: dict[Kind, Callable[[dict[str, Any]], Any]] = {NODES: summarized_node, PODS: summarized_pod}

# An idle connection outlives a few periods of the reads that reuse it, but not an API server's
# own idle timeout (kube-apiserver's is 90 s), which would close it under a request.
_KEEPALIVE_MIN, _KEEPALIVE_MAX = 15.0, 60.0


def keepalive_for(period: float) -> float:
    return min(max(3 * period, _KEEPALIVE_MIN), _KEEPALIVE_MAX)


@dataclass(frozen=True)
class PushMember(MemberReader):
    probes: ProbeThread
    # The member's cache of a kind, its watch started if need be; None: no watch for it.
    cached: Callable[[Kind], KindCache | None] = lambda _: None

    async def health(self) -> Health:
        return await self.probes.health(self.credentials)

    async def list_nodes(self) -> list[dict[str, Any]]:
        watched = self._watched(NODES)
        return watched if watched is not None else await super().list_nodes()

    async def list_pods(self) -> list[dict[str, Any]]:
        watched = self._watched(PODS)
        return watched if watched is not None else await super().list_pods()

    def _watched(self, kind: Kind) -> list[dict[str, Any]] | None:
        cache = self.cached(kind)
        return cache.values() if cache is not None and cache.synced else None


class PushMembers:
    """`async with` it around the prober's life: it runs the probe thread."""

    def __init__(self, credentials: Callable[[cluster_pb2.Cluster], Awaitable[Credentials]], timeout: float,
                 probe_period: float, collect_period: float, observe: Callable[[float], None] | None = None,
                 watches: MemberWatches | None = None) -> None:
        self.credentials = credentials
        self.watches = watches
        self.probes = ProbeThread(timeout, keepalive_for(probe_period), observe)
        self.collection = MemberSession(timeout, keepalive_for(max(probe_period, collect_period)))

    async def get(self, cluster: cluster_pb2.Cluster) -> PushMember:
        member = PushMember(self.collection, await self.credentials(cluster), self.probes)
        watches = self.watches
        if watches is None:
            return member
        return dataclasses.replace(member, cached=lambda kind: watches.cache(cluster, kind))

    async def __aenter__(self) -> PushMembers:
        self.probes.start()
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.probes.close()
        await self.collection.close()
