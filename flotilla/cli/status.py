"""`flotillactl status`: every registered service instance, its health and leader."""

from __future__ import annotations

import argparse
import asyncio
import json
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import aiohttp
import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from flotilla.cli.connection import open_store, service_channel
from flotilla.cli.table import table
from flotilla.runtime.health import REASON_METADATA
from flotilla.store import Store, StoreError
from flotilla.store.base import StoreBase
from flotilla.store.endpoints import Endpoint, list_endpoints
from flotilla.store.leader import current_leader
from flotilla.store.shards import held_shards


@dataclass
class InstanceStatus:
    endpoint: Endpoint
    health: str
    leader: bool
    # Why it is not SERVING, as the service itself says; "" when it gives no reason.
    reason: str = ""
    # The shards of the service's shared work this instance holds (flotilla.store.shards): for the
    # executor, the member clusters whose Works it applies. None: the service shares no work.
    shards: tuple[str, ...] | None = None


async def check_health(endpoint: Endpoint | str, service: str = "", timeout: float = 2.0) -> tuple[str, str]:
    """The instance's health and, when it is not SERVING, the reason it gives (`service`: which
    service an address given by hand is)."""
    async with service_channel(endpoint, service) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        call = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=timeout)
        try:
            reply = await call
        except grpc.aio.AioRpcError as e:
            unreachable = e.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
            return ("UNREACHABLE" if unreachable else e.code().name), ""
        reasons = [str(v) for k, v in (await call.trailing_metadata() or ()) if k == REASON_METADATA]
        return str(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)), "; ".join(reasons)


async def check_http_health(address: str, path: str, timeout: float = 2.0) -> tuple[str, str]:
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session, \
                session.get(f"http://{address}{path}") as response:
            return ("SERVING", "") if response.status == 200 else (f"HTTP {response.status}", "")
    except (aiohttp.ClientError, TimeoutError):
        return "UNREACHABLE", ""


def endpoint_health(endpoint: Endpoint) -> Awaitable[tuple[str, str]]:
    if endpoint.extra.get("protocol") == "http":
        return check_http_health(endpoint.address, endpoint.extra.get("health", "/"))
    return check_health(endpoint)


async def collect(store: StoreBase) -> list[InstanceStatus]:
    endpoints = await list_endpoints(store)
    healths = await asyncio.gather(*(endpoint_health(e) for e in endpoints))
    services = {e.service for e in endpoints}
    leaders = {s: await current_leader(store, s) for s in services}
    shares = {s: await _shares(store, s) for s in services}
    return [
        InstanceStatus(e, health, leaders.get(e.service) == e.id, reason,
                       None if (share := shares[e.service]) is None else tuple(share.get(e.id, ())))
        for e, (health, reason) in zip(endpoints, healths, strict=True)
    ]


async def _shares(store: StoreBase, service: str) -> dict[str, list[str]] | None:
    """Who holds which shard; None also when the caller may not read it (the column shows "-")."""
    try:
        return await held_shards(store, service)
    except StoreError:
        return None


def render(statuses: Sequence[InstanceStatus]) -> str:
    counts: dict[str, int] = {}
    for s in statuses:
        counts[s.endpoint.service] = counts.get(s.endpoint.service, 0) + 1
    rows = [
        [
            s.endpoint.service,
            str(counts[s.endpoint.service]),
            s.endpoint.id,
            "yes" if s.leader else "-",
            s.health,
            "-" if s.shards is None else str(len(s.shards)),
            s.endpoint.address,
            s.endpoint.metrics_address or "-",
        ]
        for s in statuses
    ]
    text = table(["SERVICE", "REPLICAS", "INSTANCE", "LEADER", "HEALTH", "SHARDS", "ADDRESS", "METRICS"], rows)
    # A reason is a sentence, too long for a column: listed under the table.
    notes = [f"{s.endpoint.service} {s.endpoint.id}: {s.health}: {s.reason}" for s in statuses if s.reason]
    return "\n".join([text, "", *notes]) if notes else text


def render_json(statuses: Sequence[InstanceStatus]) -> str:
    return json.dumps({"items": [
        {"service": s.endpoint.service, "instance": s.endpoint.id, "leader": s.leader, "health": s.health,
         "reason": s.reason, "address": s.endpoint.address, "metricsAddress": s.endpoint.metrics_address,
         **({} if s.shards is None else {"shards": list(s.shards)})}
        for s in statuses
    ]}, indent=2)


async def wait_for_services(
    endpoints: str,
    services: Sequence[str],
    timeout: float,
    check: Callable[[], None] = lambda: None,
    instances: int = 1,
) -> None:
    """Return once each named service has `instances` instances answering SERVING."""
    from flotilla.store.connect import make_client

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    async with make_client(endpoints) as client:
        store = Store(client, endpoints=endpoints)
        while True:
            check()
            serving = Counter(s.endpoint.service for s in await collect(store) if s.health == "SERVING")
            missing = [s for s in services if serving[s] < instances]
            if not missing:
                return
            if loop.time() > deadline:
                raise TimeoutError(f"services not SERVING after {timeout:.0f}s: {', '.join(missing)}")
            # Processes starting up give no signal to await: poll the registry.
            await asyncio.sleep(0.1)


async def cmd_status(args: argparse.Namespace) -> int:
    async with open_store(args) as store:
        statuses = await collect(store)
    if args.output == "json":
        print(render_json(statuses))
    elif not statuses:
        print(f"No services registered in etcd at {store.endpoints}.")
        return 0
    else:
        print(render(statuses))
    return 0 if all(s.health == "SERVING" for s in statuses) else 1


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("status", help="each service: replicas, leader, health, address, metrics address")
    p.add_argument("-o", "--output", choices=["json"], default=None)
    p.set_defaults(run=cmd_status)
