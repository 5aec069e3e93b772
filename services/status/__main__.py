"""`python -m services.status`: cluster health for Push clusters, the Pull-cluster
health monitor, and the cluster lifecycle (finalizer, unjoin)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import grpc

from flotilla.api.v1 import status_pb2, status_pb2_grpc
from flotilla.clusterstatus.flags import add_status_flags, thresholds_from
from flotilla.clusterstatus.prober import ClusterProber
from flotilla.runtime.flags import duration, options_from
from flotilla.runtime.service import ServiceContext, ServiceSpec, main
from services.status import servicer
from services.status.controllers import StatusControllers, StatusOptions
from services.status.servicer import ClusterHealthServicer


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_status_flags(parser)
    parser.add_argument("--cluster-monitor-period", type=duration, default=duration("5s"))
    parser.add_argument("--cluster-monitor-grace-period", type=duration, default=duration("40s"))
    parser.add_argument("--cluster-startup-grace-period", type=duration, default=duration("60s"))
    parser.add_argument("--concurrent-cluster-syncs", type=int, default=20,
                        help="clusters probed at once (a hanging probe holds only its own worker), and as many "
                             "collected at once by workers of their own")



class StatusService:
    """What the ClusterHealth servicer (every replica) and the leader's controllers share: the prober."""

    def __init__(self) -> None:
        self.prober: ClusterProber | None = None

    def add_servicers(self, server: grpc.aio.Server, ctx: ServiceContext) -> Sequence[str]:
        self.prober = prober = ClusterProber(ctx.clock, thresholds_from(ctx.args),
                                             collect_period=ctx.args.cluster_collect_period)
        status_pb2_grpc.add_ClusterHealthServicer_to_server(ClusterHealthServicer(prober, ctx.clock), server)
        return [status_pb2.DESCRIPTOR.services_by_name["ClusterHealth"].full_name]

    async def lead(self, ctx: ServiceContext) -> None:
        if self.prober is None:
            raise RuntimeError("status: lead before add_servicers")
        options = options_from(StatusOptions, ctx.args)
        await StatusControllers(ctx.store, ctx.clock, self.prober, options, ctx.events, ctx.tracer,
                                manager=ctx.manager()).run()


SERVICE = StatusService()
SPEC = ServiceSpec(
    name="status",
    description="Flotilla cluster status: health probes, thresholds and Pull-cluster leases",
    add_arguments=add_arguments,
    add_servicers=SERVICE.add_servicers,
    lead=SERVICE.lead,
    access=servicer.ACCESS,
)

if __name__ == "__main__":
    sys.exit(main(SPEC))
