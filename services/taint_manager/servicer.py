"""gRPC inspection of pending and held evictions and of mass-failure protection.

Each replica answers for the bindings of its own buckets (pending and held); what protection
decides about clusters (regions, every cluster down, the clusters admitted) is the same from
every replica."""

from __future__ import annotations

from collections.abc import Callable

import grpc

from flotilla.api import registry
from flotilla.api.v1 import taint_manager_pb2, taint_manager_pb2_grpc
from flotilla.security.rbac import Request
from services.taint_manager.evictor import EvictorState
from services.taint_manager.protection import EvictionProtection

_SERVICE = taint_manager_pb2.DESCRIPTOR.services_by_name["TaintManager"].full_name
# What each call is, for RBAC (flotilla.runtime.delegated_authorization).
ACCESS = {f"/{_SERVICE}/GetEvictionState": Request("get", registry.CLUSTER.group, registry.CLUSTER.plural,
                                                   subresource="eviction")}


class TaintManagerServicer(taint_manager_pb2_grpc.TaintManagerServicer):
    def __init__(self, state: EvictorState, protection: EvictionProtection,
                 admitted: Callable[[], list[str]]) -> None:
        self.state = state
        self.protection = protection
        # The clusters the leader's records admit (every replica reads them).
        self.admitted = admitted

    async def GetEvictionState(self, request: taint_manager_pb2.GetEvictionStateRequest,
                               context: grpc.aio.ServicerContext) -> taint_manager_pb2.EvictionState:
        reply = taint_manager_pb2.EvictionState(
            every_cluster_unhealthy=self.protection.everything_down,
            admitted_clusters=self.admitted(),
        )
        for items in self.state.pending.values():
            for p in items:
                reply.pending.add(binding=p.binding, cluster=p.cluster,
                                  deadline=p.at.strftime("%Y-%m-%dT%H:%M:%SZ"))
        for held in self.state.held.values():
            for h in held:
                reply.held.add(binding=h.binding, cluster=h.cluster, reason=h.reason)
        for region in sorted(self.protection.regions.values(), key=lambda r: r.region):
            reply.regions.add(region=region.region, clusters=region.clusters, unhealthy=region.unhealthy,
                              state=region.state, rate=region.rate)
        return reply
