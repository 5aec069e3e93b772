"""Why a service is NOT_SERVING is told on its authenticated port only: the plain health port
the kubelet probes answers the same status without the reason."""

from __future__ import annotations

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from flotilla.runtime.health import REASON_METADATA, ServiceHealth, WithoutReasons


@pytest.fixture
async def health() -> ServiceHealth:
    servicer = ServiceHealth("scheduler")
    await servicer.set_reason("election", "cannot campaign: etcd at https://10.0.0.7:2379 unreachable")
    return servicer


async def check(servicer: object) -> tuple[int, list[tuple[str, str]]]:
    server = grpc.aio.server()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            call = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""), timeout=10)
            reply = await call
            return reply.status, [(k, str(v)) for k, v in (await call.trailing_metadata() or ())]
    finally:
        await server.stop(None)


async def test_the_reason_travels_with_the_answer(health: ServiceHealth) -> None:
    status, metadata = await check(health)
    assert status == health_pb2.HealthCheckResponse.NOT_SERVING
    assert (REASON_METADATA, "cannot campaign: etcd at https://10.0.0.7:2379 unreachable") in metadata


async def test_the_plain_port_tells_the_status_and_not_why(health: ServiceHealth) -> None:
    status, metadata = await check(WithoutReasons(health))
    assert status == health_pb2.HealthCheckResponse.NOT_SERVING
    assert REASON_METADATA not in [k for k, _ in metadata]
    await health.set_reason("election", None)
    assert (await check(WithoutReasons(health)))[0] == health_pb2.HealthCheckResponse.SERVING
