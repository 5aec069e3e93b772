"""`python -m services.eviction`: graceful eviction and application failover, the second half of every failover."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from datetime import timedelta

from flotilla.runtime.concurrency import BINDING_SYNCS
from flotilla.runtime.flags import duration, feature_gates
from flotilla.runtime.manager import Manager
from flotilla.runtime.service import ServiceContext, ServiceSpec, main
from flotilla.runtime.sharing import ShardedControllers, SharedInformers, buckets
from services.eviction import unfinished
from services.eviction.app_failover import ApplicationFailoverConfig
from services.eviction.application import Gates
from services.eviction.controllers import LEADER, SHARED, EvictionControllers
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


SHARED_INFORMERS = SharedInformers()


def _controllers(ctx: ServiceContext, manager: Manager, parts: tuple[str, ...],
                 owns: Callable[[str], bool] | None = None) -> EvictionControllers:
    args = ctx.args
    return EvictionControllers(
        ctx.store, ctx.clock,
        GracefulEvictionConfig(timeout=timedelta(seconds=args.graceful_eviction_timeout)),
        workers=args.concurrent_resourcebinding_syncs, events=ctx.events, tracer=ctx.tracer,
        manager=manager, application=application_failover(args), parts=parts, owns=owns,
    )


async def share(ctx: ServiceContext) -> None:
    """Every replica's work: graceful eviction and the failover history of the bindings in its
    buckets (flotilla.runtime.sharing); the replicas divide the buckets among themselves and
    hand them over within a lease period."""
    manager = ctx.manager()
    coordinator = ctx.shard_coordinator(buckets, lambda b: glue.acquire(b), lambda b: glue.release(b))
    controllers = _controllers(ctx, manager, (SHARED,), owns=coordinator.owns)
    glue = ShardedControllers(controllers.shared, controllers.binding_keys)
    manager.add_runnable("shards", coordinator.run)
    await SHARED_INFORMERS.run_lending(manager)


async def lead(ctx: ServiceContext) -> None:
    """The leader's work: application failover, failback and the unfinished-work metrics, on the
    shared work's informers."""
    lender = await SHARED_INFORMERS.current()
    manager = ctx.manager(lender=lender)
    controllers = _controllers(ctx, manager, (LEADER,))
    if controllers.unfinished is not None:
        unfinished.start(controllers.unfinished)
    try:
        await SHARED_INFORMERS.run_borrowing(manager, lender)
    finally:
        if controllers.unfinished is not None:
            unfinished.stop(controllers.unfinished)


SPEC = ServiceSpec(
    name="eviction",
    description="Flotilla eviction: graceful eviction tasks aged out once the new placement is healthy, "
                "and application failover",
    add_arguments=add_arguments,
    lead=lead,
    share=share,
)

if __name__ == "__main__":
    sys.exit(main(SPEC))
