"""etcd going away is survivable: services that lost leadership while it was down say why
(NOT_SERVING with a reason) and lead again soon after it is back — real etcd, real gRPC health."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from flotilla.runtime.health import REASON_METADATA
from flotilla.runtime.service import STARTUP_PATIENCE, Runner, ServiceContext, ServiceSpec, build_parser
from flotilla.security.context import client_tls
from flotilla.security.tls import grpc_channel
from flotilla.store.embedded import EmbeddedEtcd

pytestmark = pytest.mark.integration

LEASE = 2
SERVICES = ("alpha", "beta")


class Service:
    def __init__(self, name: str, etcd: EmbeddedEtcd) -> None:
        self.terms = 0
        self.leading = asyncio.Event()

        async def lead(_ctx: ServiceContext) -> None:
            self.terms += 1
            self.leading.set()
            try:
                await asyncio.Event().wait()
            finally:
                self.leading.clear()

        spec = ServiceSpec(name=name, lead=lead)
        args = build_parser(spec).parse_args([
            "--etcd-endpoints", etcd.endpoint, "--metrics-port", "-1", "--shutdown-grace", "0s",
            "--leader-elect-lease-duration", f"{LEASE}s", "--endpoint-ttl", f"{LEASE}s",
        ])
        self.runner = Runner(spec, args)
        self.task = asyncio.create_task(self.runner.run())

    async def health(self) -> tuple[int, str]:
        async with grpc_channel(self.runner.address, client_tls()) as channel:
            call = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
            reply = await call
            reasons = [str(v) for k, v in (await call.trailing_metadata() or ()) if k == REASON_METADATA]
            return int(reply.status), "; ".join(reasons)

    async def stop(self) -> None:
        self.runner.stopping.set()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


@contextlib.asynccontextmanager
async def services(etcd: EmbeddedEtcd) -> AsyncIterator[list[Service]]:
    started = [Service(name, etcd) for name in SERVICES]
    try:
        yield started
    finally:
        await asyncio.gather(*(s.stop() for s in started))


async def until(timeout: float, check: Callable[[], Awaitable[bool]]) -> None:
    async with asyncio.timeout(timeout):
        while not await check():
            # A gRPC health answer gives no event to await: poll it.
            await asyncio.sleep(0.05)


async def test_every_service_leads_again_after_etcd_restarts(private_etcd: EmbeddedEtcd) -> None:
    async with services(private_etcd) as running:
        await asyncio.wait_for(asyncio.gather(*(s.leading.wait() for s in running)), 30)

        await asyncio.to_thread(private_etcd.stop)

        async def not_serving_with_reason() -> bool:
            answers = [await s.health() for s in running]
            return all(status == health_pb2.HealthCheckResponse.NOT_SERVING and reason for status, reason in answers)

        # The lease runs out with etcd gone: leadership is given up and the reason shown.
        await until(LEASE + 20, not_serving_with_reason)
        assert not any(s.leading.is_set() for s in running)
        reasons = [(await s.health())[1] for s in running]
        assert all("leadership" in r for r in reasons), reasons

        await asyncio.to_thread(private_etcd.start)
        back = time.monotonic()

        async def all_lead_and_serve() -> bool:
            if not all(s.leading.is_set() for s in running):
                return False
            answers = [await s.health() for s in running]
            return all(status == health_pb2.HealthCheckResponse.SERVING for status, _ in answers)

        await until(LEASE + 15, all_lead_and_serve)
        print(f"every service leading again {time.monotonic() - back:.2f}s after etcd returned")
        assert [s.terms for s in running] == [2, 2]


async def test_a_service_started_while_etcd_is_away_serves_once_it_is_back(
        private_etcd: EmbeddedEtcd, caplog: pytest.LogCaptureFixture) -> None:
    """An etcd electing a leader, or restarting, as a replica starts is no reason for it to exit."""
    await asyncio.to_thread(private_etcd.stop)
    service = Service("gamma", private_etcd)
    try:
        async def retrying() -> bool:
            assert not service.task.done(), service.task
            return "event=etcd-unreachable-at-start" in caplog.text

        await until(STARTUP_PATIENCE, retrying)
        await asyncio.to_thread(private_etcd.start)
        await asyncio.wait_for(service.leading.wait(), STARTUP_PATIENCE)
        assert (await service.health())[0] == health_pb2.HealthCheckResponse.SERVING
    finally:
        await service.stop()
