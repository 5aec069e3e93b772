"""`python -m services.status`: cluster health for Push clusters, the Pull-cluster
health monitor, and the cluster lifecycle (finalizer, unjoin)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from datetime import timedelta

import grpc

from flotilla.api import registry
from flotilla.api.v1 import status_pb2, status_pb2_grpc
from flotilla.clusterstatus.clients import MemberClients
from flotilla.clusterstatus.flags import add_status_flags, thresholds_from
from flotilla.clusterstatus.prober import ClusterProber
from flotilla.runtime.controller import Controller
from flotilla.runtime.flags import duration
from flotilla.runtime.service import ServiceContext, ServiceSpec, main
from flotilla.runtime.workqueue import WorkQueue
from flotilla.store.informer import Informer
from services.status.health_monitor import LEASE_NAMESPACE, HealthMonitor
from services.status.lifecycle import ClusterLifecycleReconciler
from services.status.monitor import Grace
from services.status.push import PushStatusReconciler
from services.status.servicer import ClusterHealthServicer


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_status_flags(parser)
    parser.add_argument("--cluster-monitor-period", type=duration, default=duration("5s"))
    parser.add_argument("--cluster-monitor-grace-period", type=duration, default=duration("40s"))
    parser.add_argument("--cluster-startup-grace-period", type=duration, default=duration("60s"))
    parser.add_argument("--concurrent-cluster-syncs", type=int, default=20,
                        help="clusters probed at once (a hanging probe holds only its own worker)")


def add_servicers(server: grpc.aio.Server, ctx: ServiceContext) -> Sequence[str]:
    prober = ClusterProber(ctx.clock, thresholds_from(ctx.args))
    ctx.extra["prober"] = prober
    status_pb2_grpc.add_ClusterHealthServicer_to_server(ClusterHealthServicer(prober, ctx.clock), server)
    return [status_pb2.DESCRIPTOR.services_by_name["ClusterHealth"].full_name]


async def lead(ctx: ServiceContext) -> None:
    args = ctx.args
    clusters = Informer(ctx.store, registry.CLUSTER)
    leases = Informer(ctx.store, registry.LEASE, namespace=LEASE_NAMESPACE)
    clients = MemberClients(ctx.store, timeout=args.cluster_probe_timeout)
    push = Controller("cluster-status", PushStatusReconciler(
        ctx.store, ctx.clock, clusters, ctx.extra["prober"], clients, args.cluster_status_update_frequency,
        ctx.events, ctx.tracer,
    ), WorkQueue(ctx.clock, "cluster-status"), workers=args.concurrent_cluster_syncs)
    lifecycle = Controller("cluster-lifecycle", ClusterLifecycleReconciler(
        ctx.store, clusters, deletion_poll=args.cluster_status_update_frequency,
    ), WorkQueue(ctx.clock, "cluster-lifecycle"))
    monitor = HealthMonitor(ctx.store, ctx.clock, clusters, leases, Grace(
        monitor=timedelta(seconds=args.cluster_monitor_grace_period),
        startup=timedelta(seconds=args.cluster_startup_grace_period),
    ))

    def on_cluster(kind: object, obj: object, old: object) -> None:
        key = obj.metadata.name  # type: ignore[attr-defined]
        lifecycle.enqueue(key)
        # Probing is self-driven by requeues; a new or changed cluster is looked at at once.
        if old is None or old.metadata.generation != obj.metadata.generation:  # type: ignore[attr-defined]
            push.enqueue(key)

    clusters.add_handler(on_cluster)
    tasks = [asyncio.create_task(t) for t in (clusters.run(), leases.run(), push.run(), lifecycle.run())]
    try:
        await clusters.wait_synced()
        await leases.wait_synced()
        await monitor.run(args.cluster_monitor_period)
    finally:
        await push.stop()
        await lifecycle.stop()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await clients.close()


SPEC = ServiceSpec(
    name="status",
    description="Flotilla cluster status: health probes, thresholds and Pull-cluster leases",
    add_arguments=add_arguments,
    add_servicers=add_servicers,
    lead=lead,
)

if __name__ == "__main__":
    sys.exit(main(SPEC))
