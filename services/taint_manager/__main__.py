"""`python -m services.taint_manager`: cluster conditions -> taints, NoExecute taints -> evictions.

Every replica evicts the bindings of its share of the buckets; the leader writes each cluster's
taints and admits clusters to be evicted from (services/taint_manager/controllers.py)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from datetime import timedelta

import grpc

from flotilla.api.v1 import taint_manager_pb2, taint_manager_pb2_grpc
from flotilla.runtime.flags import duration, feature_gates
from flotilla.runtime.manager import Manager
from flotilla.runtime.service import ServiceContext, ServiceSpec, main
from flotilla.runtime.sharing import ShardedControllers, SharedInformers, buckets
from services.taint_manager import servicer
from services.taint_manager.admissions import AdmissionRecords
from services.taint_manager.cluster_taints import TaintConfig
from services.taint_manager.controllers import LEADER, SHARED, TaintManager
from services.taint_manager.evictor import EvictorConfig, EvictorState
from services.taint_manager.protection import EvictionProtection, ProtectionConfig
from services.taint_manager.servicer import TaintManagerServicer
from services.taint_manager.taint_times import TaintTimes

DEFAULT_GATES = {"Failover": True, "GracefulEviction": True, "StatefulFailoverInjection": False}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--feature-gates", type=feature_gates, default={},
                        help="Failover=true|false,GracefulEviction=true|false,StatefulFailoverInjection=true|false")
    parser.add_argument("--failover-eviction-timeout", type=duration, default=duration("5m"),
                        help="how long a cluster stays not Ready before its NoExecute taint (0: never)")
    parser.add_argument("--enable-no-execute-taint-eviction", default=True, action=argparse.BooleanOptionalAction)
    parser.add_argument("--no-execute-taint-eviction-purge-mode", choices=["Gracefully", "Directly"],
                        default="Gracefully", help="for bindings without spec.failover.cluster")
    parser.add_argument("--unhealthy-cluster-threshold", type=float, default=0.55,
                        help="fraction of a region's clusters unhealthy above which its evictions slow down")
    parser.add_argument("--cluster-eviction-rate", type=float, default=0.0,
                        help="clusters per second whose bindings start being evicted (0: no limit)")
    parser.add_argument("--secondary-cluster-eviction-rate", type=float, default=0.01,
                        help="the same, in a region past the unhealthy threshold")
    parser.add_argument("--concurrent-evictions", type=int, default=32, help="bindings evicted at once")


def gates(args: argparse.Namespace) -> dict[str, bool]:
    return {**DEFAULT_GATES, **args.feature_gates}


class TaintManagerService:
    """What the TaintManager servicer (every replica), the shared work (every replica, its buckets
    of bindings) and the leader's work share: eviction protection, the admission records, the
    evictor's state it reports, and when this process wrote each taint."""

    def __init__(self) -> None:
        self.protection: EvictionProtection | None = None
        self.evictor_state: EvictorState | None = None
        self.admissions: AdmissionRecords | None = None
        self.times = TaintTimes()
        self.informers = SharedInformers()
        self.running: TaintManager | None = None

    def add_servicers(self, server: grpc.aio.Server, ctx: ServiceContext) -> Sequence[str]:
        args = ctx.args
        self.protection = protection = EvictionProtection(ctx.clock, ProtectionConfig(
            unhealthy_threshold=args.unhealthy_cluster_threshold,
            primary_rate=args.cluster_eviction_rate,
            secondary_rate=args.secondary_cluster_eviction_rate,
            recovery_grace=args.failover_eviction_timeout,
        ))
        self.evictor_state = state = EvictorState()
        self.admissions = AdmissionRecords(ctx.store)
        taint_manager_pb2_grpc.add_TaintManagerServicer_to_server(
            TaintManagerServicer(state, protection, self.admitted), server)
        return [taint_manager_pb2.DESCRIPTOR.services_by_name["TaintManager"].full_name]

    def admitted(self) -> list[str]:
        running = self.running
        return running.admitted() if running is not None else []

    def _taint_manager(self, ctx: ServiceContext, manager: Manager, parts: tuple[str, ...],
                       owns: Callable[[str], bool] | None = None) -> TaintManager:
        if self.protection is None or self.evictor_state is None or self.admissions is None:
            raise RuntimeError("taint_manager: started before add_servicers")
        args, enabled = ctx.args, gates(ctx.args)
        return TaintManager(
            ctx.store, ctx.clock, self.protection,
            TaintConfig(enabled["Failover"], timedelta(seconds=args.failover_eviction_timeout)),
            EvictorConfig(enabled=args.enable_no_execute_taint_eviction,
                          graceful_eviction=enabled["GracefulEviction"],
                          state_preservation=enabled["StatefulFailoverInjection"],
                          default_purge_mode=args.no_execute_taint_eviction_purge_mode),
            workers=args.concurrent_evictions, events=ctx.events, tracer=ctx.tracer,
            state=self.evictor_state if SHARED in parts else None, manager=manager, parts=parts, owns=owns,
            admissions=self.admissions, taint_times=self.times,
        )

    async def share(self, ctx: ServiceContext) -> None:
        """Every replica's work: NoExecute eviction of the bindings in its buckets
        (flotilla.runtime.sharing); the replicas divide the buckets among themselves and hand
        them over within a lease period."""
        manager = ctx.manager()
        coordinator = ctx.shard_coordinator(buckets, lambda b: glue.acquire(b), lambda b: glue.release(b))
        self.running = shared = self._taint_manager(ctx, manager, (SHARED,), owns=coordinator.owns)
        glue = ShardedControllers(shared.shared, shared.binding_keys)
        manager.add_runnable("shards", coordinator.run)
        try:
            await self.informers.run_lending(manager)
        finally:
            shared.detach()
            self.running = None

    async def lead(self, ctx: ServiceContext) -> None:
        """The leader's work: each cluster's taints and its admission to be evicted from, on the
        shared work's informers."""
        lender = await self.informers.current()
        leading = self._taint_manager(ctx, ctx.manager(lender=lender), (LEADER,))
        try:
            await self.informers.run_borrowing(leading.manager, lender)
        finally:
            leading.detach()


SERVICE = TaintManagerService()
SPEC = ServiceSpec(
    name="taint_manager",
    description="Flotilla taint manager: cluster conditions to taints, NoExecute taints to evictions",
    add_arguments=add_arguments,
    add_servicers=SERVICE.add_servicers,
    lead=SERVICE.lead,
    share=SERVICE.share,
    access=servicer.ACCESS,
)

if __name__ == "__main__":
    sys.exit(main(SPEC))
