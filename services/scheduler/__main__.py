"""`python -m services.scheduler`: places bindings on clusters (docs/karmada-rules.md §8).

The replicas divide the bindings by bucket (flotilla.runtime.sharing) and each places its own; every
replica serves Explain and WhatIf. No leader is elected: nothing the scheduler does is single.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence

import grpc

from flotilla.api.v1 import scheduler_pb2, scheduler_pb2_grpc
from flotilla.api.wellknown import DEFAULT_SCHEDULER
from flotilla.runtime.flags import duration, feature_gates, options_from
from flotilla.runtime.service import ServiceContext, ServiceSpec, main
from flotilla.runtime.sharing import buckets
from flotilla.scheduler.capacity import NoReservations, Reservations
from flotilla.scheduler.framework import Framework
from flotilla.scheduler.plugin_api import PluginError
from services.scheduler import servicer
from services.scheduler.controllers import SchedulerLoop
from services.scheduler.reconciler import SchedulerOptions
from services.scheduler.servicer import SchedulerServicer

# Karmada's default: MultiplePodTemplatesScheduling is alpha and off.
DEFAULT_GATES = {"MultiplePodTemplatesScheduling": False}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scheduler-name", default=DEFAULT_SCHEDULER,
                        help="schedule only bindings whose spec.schedulerName is this")
    parser.add_argument("--plugins", default="*",
                        help="plugins to run: '*' all built-in and installed ones, 'Name' one, '-Name' not that one "
                             "(e.g. '*,-ClusterLocality')")
    parser.add_argument("--enable-empty-workload-propagation", default=False, action=argparse.BooleanOptionalAction,
                        help="keep selected clusters that get 0 replicas in spec.clusters")
    parser.add_argument("--workers", type=int, default=16, help="bindings scheduled at once, per binding kind")
    parser.add_argument("--unschedulable-retry-period", type=duration, default=duration("30s"),
                        help="the longest wait before a binding that could not be placed is retried "
                             "(the wait starts at 1s and doubles after each failure)")
    parser.add_argument("--feature-gates", type=feature_gates, default={},
                        help="MultiplePodTemplatesScheduling=false (alpha, as in Karmada)")
    parser.add_argument("--capacity-reservation-ttl", type=duration, default=duration("20s"),
                        help="how long replicas just placed count against a cluster before its reported "
                             "resourceSummary is trusted to include them")



def scheduler_options(args: argparse.Namespace) -> SchedulerOptions:
    """The flags, with the feature gates this scheduler knows (an unknown one is for another service)."""
    gates = {**DEFAULT_GATES, **args.feature_gates}
    return dataclasses.replace(options_from(SchedulerOptions, args),
                               multiple_pod_templates=gates["MultiplePodTemplatesScheduling"])


class SchedulerService:
    """What the Explain/WhatIf servicer and the scheduling loop of one replica share: the plugins
    built from --plugins, and the loop whose reservations WhatIf reads."""

    def __init__(self) -> None:
        self.framework: Framework | None = None
        self.loop: SchedulerLoop | None = None

    def add_servicers(self, server: grpc.aio.Server, ctx: ServiceContext) -> Sequence[str]:
        try:
            framework = Framework.build(ctx.args.plugins)
        except PluginError as e:
            raise SystemExit(f"scheduler: {e}") from None
        self.framework = framework
        servicer = SchedulerServicer(ctx.store, ctx.clock, framework, scheduler_options(ctx.args),
                                     self.reservations)
        scheduler_pb2_grpc.add_SchedulerServicer_to_server(servicer, server)
        return [scheduler_pb2.DESCRIPTOR.services_by_name["Scheduler"].full_name]

    def reservations(self) -> Reservations:
        loop = self.loop
        return loop.ledger if loop is not None else NoReservations()

    async def share(self, ctx: ServiceContext) -> None:
        """Every replica's work: the bindings of its buckets placed, the buckets divided among the
        replicas and handed over within a lease period (ServiceContext.shard_coordinator)."""
        if self.framework is None:
            raise RuntimeError("scheduler: share before add_servicers")
        manager = ctx.manager()
        coordinator = ctx.shard_coordinator(buckets, lambda b: acquire(b), lambda b: release(b))
        loop = SchedulerLoop(ctx.store, ctx.clock, self.framework, scheduler_options(ctx.args),
                             ctx.events, ctx.tracer, manager=manager, owns=coordinator.owns)

        async def acquire(bucket: str) -> None:
            for part in loop.sharded:
                await part.acquire(bucket)

        async def release(bucket: str) -> None:
            for part in loop.sharded:
                await part.release(bucket)

        manager.add_runnable("shards", coordinator.run)
        self.loop = loop
        try:
            await loop.run()
        finally:
            self.loop = None


SERVICE = SchedulerService()
SPEC = ServiceSpec(
    name="scheduler",
    description="Flotilla scheduler: places ResourceBindings on member clusters",
    add_arguments=add_arguments,
    add_servicers=SERVICE.add_servicers,
    share=SERVICE.share,
    access=servicer.ACCESS,
)

if __name__ == "__main__":
    sys.exit(main(SPEC))
