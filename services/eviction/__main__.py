"""`python -m services.eviction`: graceful eviction and application failover, the second half of every failover."""

from __future__ import annotations

import argparse
import sys
from datetime import timedelta

from flotilla.runtime.concurrency import BINDING_SYNCS
from flotilla.runtime.flags import duration, feature_gates
from flotilla.runtime.service import ServiceContext, ServiceSpec, main
from services.eviction.app_failover import ApplicationFailoverConfig
from services.eviction.application import Gates
from services.eviction.controllers import EvictionControllers
from services.eviction.graceful import GracefulEvictionConfig


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--graceful-eviction-timeout", type=duration, default=duration("10m"),
                        help="how long a graceful eviction task without gracePeriodSeconds may live")
    parser.add_argument("--concurrent-resourcebinding-syncs", type=int, default=BINDING_SYNCS,
                        help="bindings assessed at once (Karmada: 5; docs/differences.md)")
    # The taint manager's gates and defaults (services/taint_manager/__main__.py).
    parser.add_argument("--feature-gates", type=feature_gates, default={},
                        help="Failover=true|false,GracefulEviction=true|false,StatefulFailoverInjection=true|false")


DEFAULT_GATES = {"Failover": True, "GracefulEviction": True, "StatefulFailoverInjection": False}


def application_failover(args: argparse.Namespace) -> ApplicationFailoverConfig:
    enabled = {**DEFAULT_GATES, **args.feature_gates}
    return ApplicationFailoverConfig(enabled=enabled["Failover"], gates=Gates(
        graceful_eviction=enabled["GracefulEviction"], state_preservation=enabled["StatefulFailoverInjection"]))


async def lead(ctx: ServiceContext) -> None:
    args = ctx.args
    await EvictionControllers(
        ctx.store, ctx.clock,
        GracefulEvictionConfig(timeout=timedelta(seconds=args.graceful_eviction_timeout)),
        workers=args.concurrent_resourcebinding_syncs, events=ctx.events, tracer=ctx.tracer,
        manager=ctx.manager(), application=application_failover(args),
    ).run()


SPEC = ServiceSpec(
    name="eviction",
    description="Flotilla eviction: graceful eviction tasks aged out once the new placement is healthy, "
                "and application failover",
    add_arguments=add_arguments,
    lead=lead,
)

if __name__ == "__main__":
    sys.exit(main(SPEC))
