"""`python -m services.executor --mode agent --cluster NAME --kubeconfig PATH`: the Pull-mode agent.

Each agent elects a leader among its own replicas (service `agent-<cluster>`),
so agents of different clusters never block each other.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from flotilla.clusterstatus.flags import add_status_flags, thresholds_from
from flotilla.clusterstatus.prober import ClusterProber
from flotilla.clusterstatus.publish import StatusPublisher
from flotilla.member import MemberClient, load_kubeconfig
from flotilla.runtime.flags import duration
from flotilla.runtime.service import ServiceContext, ServiceSpec, main
from services.executor.agent import PullAgent
from services.executor.lease import LeaseRenewer


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mode", choices=["agent"], default="agent",
                        help="agent: run beside one Pull-mode member cluster")
    parser.add_argument("--cluster", required=True, help="the member cluster this agent serves")
    parser.add_argument("--kubeconfig", required=True, help="kubeconfig of the member cluster")
    parser.add_argument("--context", default=None, help="kubeconfig context")
    add_status_flags(parser)
    parser.add_argument("--cluster-lease-duration", type=duration, default=duration("40s"))
    parser.add_argument("--cluster-lease-renew-interval-fraction", type=float, default=0.25)


async def lead(ctx: ServiceContext) -> None:
    args = ctx.args
    client = MemberClient(load_kubeconfig(args.kubeconfig, args.context), timeout=args.cluster_probe_timeout)
    prober = ClusterProber(ctx.clock, thresholds_from(args))
    agent = PullAgent(
        ctx.store, ctx.clock, args.cluster, client, prober,
        StatusPublisher(ctx.store, prober, ctx.events, ctx.tracer),
        LeaseRenewer(ctx.store, ctx.clock, args.cluster, ctx.identity, args.cluster_lease_duration),
        frequency=args.cluster_status_update_frequency,
        lease_fraction=args.cluster_lease_renew_interval_fraction,
    )
    try:
        await agent.run()
    finally:
        await client.close()


def spec_for(argv: Sequence[str] | None) -> ServiceSpec:
    probe = argparse.ArgumentParser(add_help=False)
    probe.add_argument("--cluster", default=os.environ.get("FLOTILLA_CLUSTER", ""))
    cluster = probe.parse_known_args(argv)[0].cluster
    return ServiceSpec(
        name=f"agent-{cluster}" if cluster else "agent",
        description="Flotilla Pull-mode agent for one member cluster",
        add_arguments=add_arguments,
        lead=lead,
    )


if __name__ == "__main__":
    sys.exit(main(spec_for(sys.argv[1:])))
