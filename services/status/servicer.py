"""gRPC inspection: recent probes of a cluster and its threshold state."""

from __future__ import annotations

from datetime import datetime

import grpc

from flotilla.aio.clock import Clock
from flotilla.api import registry
from flotilla.api.v1 import status_pb2, status_pb2_grpc
from flotilla.clusterstatus.prober import ClusterProber
from flotilla.clusterstatus.thresholds import time_until_visible
from flotilla.security.rbac import Request
from services.rpc import abort

_SERVICE = status_pb2.DESCRIPTOR.services_by_name["ClusterHealth"].full_name
# What each call is, for RBAC (flotilla.runtime.delegated_authorization).
ACCESS = {f"/{_SERVICE}/GetClusterHealth": Request("get", registry.CLUSTER.group, registry.CLUSTER.plural,
                                                   subresource="health")}


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class ClusterHealthServicer(status_pb2_grpc.ClusterHealthServicer):
    def __init__(self, prober: ClusterProber, clock: Clock) -> None:
        self.prober = prober
        self.clock = clock

    async def GetClusterHealth(self, request: status_pb2.GetClusterHealthRequest,
                               context: grpc.aio.ServicerContext) -> status_pb2.ClusterHealthReport:
        history = self.prober.history(request.cluster)
        state = self.prober.state(request.cluster)
        if not history and state is None:
            await abort(context, grpc.StatusCode.NOT_FOUND,
                        f"no probes of cluster {request.cluster!r} (unknown, Pull mode, or not probed yet)")
        report = status_pb2.ClusterHealthReport(cluster=request.cluster)
        if state is not None:
            report.observed_status = state.status
            if state.since is not None:
                report.observed_since = _iso(state.since)
        if history and state is not None:
            remaining = time_until_visible(history[-1].observed, state, self.clock.now(), self.prober.thresholds)
            if remaining is not None and history[-1].published.status != history[-1].observed.status:
                report.seconds_until_visible = remaining.total_seconds()
        for record in history:
            report.probes.add(
                time=_iso(record.time), online=record.online, healthy=record.healthy,
                observed_status=record.observed.status, observed_reason=record.observed.reason,
                published_status=record.published.status, published_reason=record.published.reason,
                error=record.error,
            )
        return report
