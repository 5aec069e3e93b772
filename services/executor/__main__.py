"""`python -m services.executor`: bindings -> Works -> member clusters (Push clusters), or,
with `--mode agent --cluster NAME --kubeconfig PATH`, the Pull-mode agent beside one cluster.

Each agent elects a leader among its own replicas (service `agent-<cluster>`), so
agents of different clusters never block each other or the executor.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from flotilla.api.events import EventType
from flotilla.api.v1 import cluster_pb2
from flotilla.api.wellknown import CLUSTER_SECRET_NAMESPACE
from flotilla.clusterstatus.clients import MemberClients
from flotilla.clusterstatus.flags import add_status_flags, thresholds_from
from flotilla.clusterstatus.prober import ClusterProber
from flotilla.clusterstatus.publish import StatusPublisher
from flotilla.interpreter.lua import DEFAULT_TIMEOUT
from flotilla.interpreter.pool import DEFAULT_WORKERS
from flotilla.member import REQUEST_TIMEOUT, MemberClient, load_kubeconfig
from flotilla.rules.cluster_secrets import SECRET_TYPE, CachedCredentials
from flotilla.runtime.concurrency import BINDING_SYNCS, WORK_SYNCS
from flotilla.runtime.flags import duration, feature_gates
from flotilla.runtime.manager import Manager
from flotilla.runtime.service import ServiceContext, ServiceSpec, main
from flotilla.runtime.sharing import buckets
from flotilla.store import ObjectStore
from services.executor.agent import PullAgent
from services.executor.controllers import ExecutionManager, ExecutorConfig, ExecutorControllers
from services.executor.lease import LeaseRenewer

PULL = "Pull"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mode", choices=["controller", "agent"], default="controller",
                        help="controller: Push clusters from the control plane; agent: beside one Pull cluster")
    parser.add_argument("--cluster", default="", help="agent: the member cluster this agent serves")
    parser.add_argument("--kubeconfig", default="", help="agent: kubeconfig of the member cluster")
    parser.add_argument("--context", default=None, help="agent: kubeconfig context")
    add_status_flags(parser)
    parser.add_argument("--cluster-lease-duration", type=duration, default=duration("40s"))
    parser.add_argument("--cluster-lease-renew-interval-fraction", type=float, default=0.25)
    parser.add_argument("--work-status-resync-period", type=duration, default=duration("5m"),
                        help="member status arrives by watch; about this often (jittered by up to half) each "
                             "watch reports its cached objects again (a safety net against a lost reaction)")
    parser.add_argument("--concurrent-work-syncs", type=int, default=WORK_SYNCS,
                        help="Works applied and their status reported at once (Karmada: 5; docs/differences.md)")
    parser.add_argument("--feature-gates", type=feature_gates, default={},
                        help="StatefulFailoverInjection=false,PropagateDeps=true,PropagationPolicyPreemption=false,"
                             "MultiplePodTemplatesScheduling=false")
    parser.add_argument("--skipped-propagating-namespaces", default=("kube-.*",),
                        type=lambda s: tuple(p for p in s.split(",") if p),
                        help="namespaces (regular expressions) whose templates are never propagated")
    parser.add_argument("--concurrent-resourcebinding-syncs", type=int, default=BINDING_SYNCS,
                        help="bindings synced to Works and aggregated at once (Karmada: 5; docs/differences.md)")
    parser.add_argument("--interpreter-call-timeout", type=positive(duration), default=DEFAULT_TIMEOUT,
                        help="how long one call of a ResourceInterpreterCustomization script may run; a call "
                             "still running a little past it has its worker process killed, and reads Unknown")
    parser.add_argument("--interpreter-workers", type=positive(int), default=DEFAULT_WORKERS,
                        help="worker processes that run ResourceInterpreterCustomization scripts; one script "
                             "never holds all of them")


def positive(parse: Callable[[str], float]) -> Callable[[str], float]:
    """A flag type that refuses zero and negative values: a pool without workers or time runs nothing."""

    def parse_positive(text: str) -> float:
        value = parse(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
        return value

    parse_positive.__name__ = getattr(parse, "__name__", "value")
    return parse_positive


def execution_clients(store: ObjectStore, manager: Manager) -> MemberClients:
    """The members' clients of the execution side. Their credentials come from an informer: it
    asks for a client at every apply and status read, a thousand times in a failover, and Secrets
    change rarely. Each request may take the API server's own timeout (REQUEST_TIMEOUT), not the
    probe timeout: an apply is no health probe."""
    secrets = manager.informer(SECRET_TYPE, namespace=CLUSTER_SECRET_NAMESPACE)
    return MemberClients(store, timeout=REQUEST_TIMEOUT, credentials=CachedCredentials(store, secrets).load)


async def share(ctx: ServiceContext) -> None:
    """Every replica's work, for its share of the keys (flotilla.store.shards): applying the Works
    of its Push clusters and reporting their status, and the detector, the binding controllers
    and aggregation for the templates, bindings and policies in its buckets
    (flotilla.runtime.sharing). Clusters and buckets are claimed alike, so a replica that joins
    takes its share of both from the others, one that leaves or dies hands its share over within
    a lease period, and no key is ever acted on by two replicas at once."""
    args = ctx.args
    # Its informers keep ten thousand Works, bindings and templates each at scale, as bytes.
    manager = ctx.manager(compact_informers=True)
    clients = execution_clients(ctx.store, manager)
    coordinator = ctx.shard_coordinator(lambda: [*execution.shards(), *buckets()], lambda s: acquire(s),
                                        lambda s: release(s))
    execution = ExecutionManager(
        ctx.store, ctx.clock, clients.get, lambda c: c.spec.sync_mode != PULL,
        status_resync=args.work_status_resync_period, workers=args.concurrent_work_syncs, events=ctx.events,
        interpreter_timeout=args.interpreter_call_timeout, interpreter_workers=args.interpreter_workers,
        manager=manager, owns=coordinator.owns,
    )
    config = ExecutorConfig(feature_gates=args.feature_gates, skipped_namespaces=args.skipped_propagating_namespaces,
                            workers=args.concurrent_resourcebinding_syncs)
    bindings = ExecutorControllers(ctx.store, ctx.clock, config, events=ctx.events, tracer=ctx.tracer, manager=manager,
                                   interpreter_timeout=args.interpreter_call_timeout,
                                   interpreter_workers=args.interpreter_workers, owns=coordinator.owns)
    sharded = bindings.sharded()

    # A shard is a cluster or a bucket; a cluster named like a bucket is one claim for both.
    async def acquire(shard: str) -> None:
        await execution.acquire(shard)
        for part in sharded:
            await part.acquire(shard)

    async def release(shard: str) -> None:
        await execution.release(shard)
        for part in sharded:
            await part.release(shard)

    manager.on_event(execution.clusters, lambda _: coordinator.poke(),
                     predicate=lambda e: e.type is not EventType.MODIFIED)
    manager.add_runnable("shards", coordinator.run)
    try:
        await manager.run()
    finally:
        await clients.close()


async def lead_agent(ctx: ServiceContext) -> None:
    args = ctx.args
    if not args.cluster or not args.kubeconfig:
        raise SystemExit("--mode agent needs --cluster and --kubeconfig")
    credentials = load_kubeconfig(args.kubeconfig, args.context)
    # Probes are bounded by the probe timeout, applies by the API server's own (REQUEST_TIMEOUT).
    client = MemberClient(credentials, timeout=args.cluster_probe_timeout)
    execution_client = MemberClient(credentials, timeout=REQUEST_TIMEOUT)
    prober = ClusterProber(ctx.clock, thresholds_from(args), collect_period=args.cluster_collect_period)
    agent = PullAgent(
        ctx.store, ctx.clock, args.cluster, client, prober,
        StatusPublisher(ctx.store, prober, ctx.events, ctx.tracer),
        LeaseRenewer(ctx.store, ctx.clock, args.cluster, ctx.identity, args.cluster_lease_duration),
        frequency=args.cluster_status_update_frequency,
        lease_fraction=args.cluster_lease_renew_interval_fraction,
    )

    async def connect(_: cluster_pb2.Cluster) -> MemberClient:
        return execution_client

    manager = ctx.manager()
    ExecutionManager(
        ctx.store, ctx.clock, connect, lambda c: c.metadata.name == args.cluster, only_cluster=args.cluster,
        status_resync=args.work_status_resync_period, workers=args.concurrent_work_syncs, events=ctx.events,
        interpreter_timeout=args.interpreter_call_timeout, interpreter_workers=args.interpreter_workers,
        manager=manager,
    )
    manager.add_runnable("pull-agent", agent.run)
    try:
        await manager.run()
    finally:
        await client.close()
        await execution_client.close()


def spec_for(argv: Sequence[str] | None) -> ServiceSpec:
    probe = argparse.ArgumentParser(add_help=False)
    probe.add_argument("--mode", default=os.environ.get("FLOTILLA_MODE", "controller"))
    probe.add_argument("--cluster", default=os.environ.get("FLOTILLA_CLUSTER", ""))
    known = probe.parse_known_args(argv)[0]
    if known.mode == "agent":
        return ServiceSpec(
            name=f"agent-{known.cluster}" if known.cluster else "agent",
            description="Flotilla Pull-mode agent for one member cluster",
            add_arguments=add_arguments,
            lead=lead_agent,
        )
    return ServiceSpec(
        name="executor",
        description="Flotilla executor: templates and policies -> bindings -> Works -> member clusters",
        add_arguments=add_arguments,
        share=share,
    )


if __name__ == "__main__":
    sys.exit(main(spec_for(sys.argv[1:])))
