"""`python -m services.status`: cluster health for Push clusters, the Pull-cluster
health monitor, and the cluster lifecycle (finalizer, unjoin)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import timedelta

import grpc

from flotilla.api import registry
from flotilla.api.v1 import status_pb2, status_pb2_grpc
from flotilla.api.wellknown import CLUSTER_SECRET_NAMESPACE
from flotilla.clusterstatus.clients import MemberClients
from flotilla.clusterstatus.flags import add_status_flags, thresholds_from
from flotilla.clusterstatus.prober import ClusterProber
from flotilla.clusterstatus.push_members import SUMMARY_KINDS, PushMembers
from flotilla.credentials import SECRET_TYPE, CachedCredentials
from flotilla.member.watches import MemberWatches
from flotilla.runtime.flags import duration
from flotilla.runtime.service import ServiceContext, ServiceSpec, main
from services.status import metrics, routing
from services.status.collection import CollectReconciler
from services.status.health_monitor import LEASE_NAMESPACE, HealthMonitor
from services.status.lifecycle import ClusterLifecycleReconciler
from services.status.monitor import Grace
from services.status.push import PushStatusReconciler, is_pull
from services.status.servicer import ClusterHealthServicer


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_status_flags(parser)
    parser.add_argument("--cluster-monitor-period", type=duration, default=duration("5s"))
    parser.add_argument("--cluster-monitor-grace-period", type=duration, default=duration("40s"))
    parser.add_argument("--cluster-startup-grace-period", type=duration, default=duration("60s"))
    parser.add_argument("--concurrent-cluster-syncs", type=int, default=20,
                        help="clusters probed at once (a hanging probe holds only its own worker), and as many "
                             "collected at once by workers of their own")


def add_servicers(server: grpc.aio.Server, ctx: ServiceContext) -> Sequence[str]:
    prober = ClusterProber(ctx.clock, thresholds_from(ctx.args), collect_period=ctx.args.cluster_collect_period)
    ctx.extra["prober"] = prober
    status_pb2_grpc.add_ClusterHealthServicer_to_server(ClusterHealthServicer(prober, ctx.clock), server)
    return [status_pb2.DESCRIPTOR.services_by_name["ClusterHealth"].full_name]


async def lead(ctx: ServiceContext) -> None:
    args = ctx.args
    manager = ctx.manager()
    clusters = manager.informer(registry.CLUSTER)
    leases = manager.informer(registry.LEASE, namespace=LEASE_NAMESPACE)
    # Only the cluster-secret namespace: templates of kind Secret live under the same resource.
    secrets = manager.informer(SECRET_TYPE, namespace=CLUSTER_SECRET_NAMESPACE)
    credentials = CachedCredentials(ctx.store, secrets).load
    # Nodes and pods by watch, for the summaries: a connection of their own per member and kind.
    watch_clients = MemberClients(ctx.store, args.cluster_probe_timeout, credentials=credentials)
    watches = MemberWatches(ctx.clock, watch_clients.get, lambda c: not is_pull(c), _no_reaction, _no_reaction,
                            keep=SUMMARY_KINDS)
    manager.on_event(clusters, watches.on_cluster)
    manager.add_runnable("member-watches", watches.run)
    members = PushMembers(credentials, args.cluster_probe_timeout, args.cluster_status_update_frequency,
                          args.cluster_collect_period, observe=metrics.CLUSTER_PROBE_DURATION.observe,
                          watches=watches)
    push_reconciler = PushStatusReconciler(
        ctx.store, clusters, ctx.extra["prober"], members, args.cluster_status_update_frequency,
        lambda key: collect.enqueue(key), ctx.events, ctx.tracer,
    )
    push = manager.controller("cluster-status", push_reconciler, workers=args.concurrent_cluster_syncs)
    collect = manager.controller("cluster-collect", CollectReconciler(
        clusters, ctx.extra["prober"], members, push_reconciler.publisher,
    ), workers=args.concurrent_cluster_syncs)
    lifecycle = manager.controller("cluster-lifecycle", ClusterLifecycleReconciler(
        ctx.store, clusters, deletion_poll=args.cluster_status_update_frequency,
    ))
    monitor = HealthMonitor(ctx.store, ctx.clock, clusters, leases, Grace(
        monitor=timedelta(seconds=args.cluster_monitor_grace_period),
        startup=timedelta(seconds=args.cluster_startup_grace_period),
    ))
    manager.watch(clusters, routing.cluster_name, lifecycle)
    manager.watch(clusters, routing.cluster_name, push, predicate=routing.generation_changed)
    metrics.track_ready(manager, clusters)
    manager.add_runnable("health-monitor", lambda: monitor.run(args.cluster_monitor_period))
    try:
        async with members:
            await manager.run()
    finally:
        await watch_clients.close()


def _no_reaction(*_: object) -> None:
    """A collection reads the caches when it is due; a change or a sync alone asks for none."""


SPEC = ServiceSpec(
    name="status",
    description="Flotilla cluster status: health probes, thresholds and Pull-cluster leases",
    add_arguments=add_arguments,
    add_servicers=add_servicers,
    lead=lead,
)

if __name__ == "__main__":
    sys.exit(main(SPEC))
