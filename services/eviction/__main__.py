"""`python -m services.eviction`: graceful eviction, the second half of every failover."""

from __future__ import annotations

import argparse
import sys
from datetime import timedelta

from flotilla.runtime.flags import duration
from flotilla.runtime.service import ServiceContext, ServiceSpec, main
from services.eviction.controllers import EvictionControllers
from services.eviction.graceful import GracefulEvictionConfig


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--graceful-eviction-timeout", type=duration, default=duration("10m"),
                        help="how long a graceful eviction task without gracePeriodSeconds may live")
    parser.add_argument("--concurrent-resourcebinding-syncs", type=int, default=5,
                        help="bindings assessed at once")


async def lead(ctx: ServiceContext) -> None:
    args = ctx.args
    await EvictionControllers(
        ctx.store, ctx.clock,
        GracefulEvictionConfig(timeout=timedelta(seconds=args.graceful_eviction_timeout)),
        workers=args.concurrent_resourcebinding_syncs, events=ctx.events, tracer=ctx.tracer,
        manager=ctx.manager(),
    ).run()


SPEC = ServiceSpec(
    name="eviction",
    description="Flotilla eviction: graceful eviction tasks aged out once the new placement is healthy",
    add_arguments=add_arguments,
    lead=lead,
)

if __name__ == "__main__":
    sys.exit(main(SPEC))
