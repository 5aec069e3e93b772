"""A leader whose loop dies is not silently idle: grpc.health.v1 answers NOT_SERVING until the
Manager has restarted the loop, then SERVING again — read over gRPC, as a probe would."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from flotilla.runtime.service import Runner, ServiceContext, ServiceSpec, build_parser
from flotilla.security.context import client_tls
from flotilla.security.tls import grpc_channel
from flotilla.store import Store

pytestmark = pytest.mark.integration

SERVING, NOT_SERVING = health_pb2.HealthCheckResponse.SERVING, health_pb2.HealthCheckResponse.NOT_SERVING


async def test_a_dead_task_turns_the_service_not_serving_until_it_is_restarted(store: Store) -> None:
    failing = asyncio.Event()
    release = asyncio.Event()
    runs = 0

    async def flaky_loop() -> None:
        nonlocal runs
        runs += 1
        if runs == 1:
            failing.set()
            await release.wait()
            raise RuntimeError("watch handler bug")
        await asyncio.Event().wait()

    async def lead(ctx: ServiceContext) -> None:
        # Long enough that a probe polling on a loaded machine cannot miss the NOT_SERVING window.
        manager = ctx.manager(backoff=(2.0, 4.0))
        manager.add_runnable("flaky", flaky_loop)
        await manager.run()

    spec = ServiceSpec(name="healthtest", lead=lead)
    args = build_parser(spec).parse_args(["--etcd-endpoints", store.endpoints, "--metrics-port", "-1",
                                          "--no-leader-elect", "--shutdown-grace", "0s"])
    runner = Runner(spec, args)
    running = asyncio.create_task(runner.run())
    try:
        async with asyncio.timeout(30):
            await failing.wait()
            while not runner.address:
                await asyncio.sleep(0.01)
        async with grpc_channel(runner.address, client_tls()) as channel:
            stub = health_pb2_grpc.HealthStub(channel)

            async def status() -> int:
                reply = await stub.Check(health_pb2.HealthCheckRequest(service="healthtest"))
                return int(reply.status)

            async def becomes(wanted: int) -> None:
                async with asyncio.timeout(30):
                    while await status() != wanted:
                        await asyncio.sleep(0.02)

            assert await status() == SERVING
            release.set()
            await becomes(NOT_SERVING)
            await becomes(SERVING)
        assert runs == 2
    finally:
        runner.stopping.set()
        with contextlib.suppress(asyncio.CancelledError):
            await running
