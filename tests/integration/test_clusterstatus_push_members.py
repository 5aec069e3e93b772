"""Issue 14: Push members' health probed on a loop of its own, each over one kept-alive
connection, with credentials from an informer; a rotated token or CA still takes effect."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from flotilla.api import codec
from flotilla.api.v1 import cluster_pb2
from flotilla.api.wellknown import CLUSTER_SECRET_NAMESPACE
from flotilla.clusterstatus.collect import collect
from flotilla.clusterstatus.push_members import PushMembers
from flotilla.member import Credentials, Health
from flotilla.rules.cluster_secrets import SECRET_TYPE, CachedCredentials, secret_document
from flotilla.store import Store
from flotilla.store.embedded import free_port
from flotilla.store.informer import Informer
from sim.tls import Authority

pytestmark = pytest.mark.integration


@dataclass
class Member:
    """A member API server: `/readyz` answering `status` to `token`, and what collection lists."""

    authority: Authority
    port: int = field(default_factory=free_port)
    token: str = "t1"
    status: int = 200
    readyz: bool = True
    hang: asyncio.Event | None = None
    connections: set[tuple[str, int]] = field(default_factory=set)
    _runner: web.AppRunner | None = None

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def credentials(self, token: str | None = None) -> Credentials:
        return Credentials(self.server, self.token if token is None else token, self.authority.ca_data)

    async def _answer(self, request: web.Request, body: dict[str, Any] | None = None) -> web.Response:
        self.connections.add(request.transport.get_extra_info("peername") if request.transport else ("", 0))
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return web.Response(status=401)
        if body is not None:
            return web.json_response(body)
        if self.hang is not None:
            await self.hang.wait()
        if request.path == "/readyz" and not self.readyz:
            return web.Response(status=404)
        return web.Response(status=self.status, text="ok")

    async def start(self) -> None:
        def listing(body: dict[str, Any]) -> Callable[[web.Request], Awaitable[web.Response]]:
            async def answer(request: web.Request) -> web.Response:
                return await self._answer(request, body)

            return answer

        app = web.Application()
        app.router.add_get("/readyz", self._answer)
        app.router.add_get("/healthz", self._answer)
        app.router.add_get("/version", listing({"gitVersion": "v1.31.0"}))
        app.router.add_get("/api", listing({"versions": ["v1"]}))
        app.router.add_get("/apis", listing({"groups": [{"versions": [{"groupVersion": "apps/v1"}]}]}))
        app.router.add_get("/api/v1", listing({"groupVersion": "v1", "resources": [{"name": "pods", "kind": "Pod"}]}))
        app.router.add_get("/apis/apps/v1", listing({"groupVersion": "apps/v1", "resources": [
            {"name": "deployments", "kind": "Deployment"}, {"name": "deployments/status", "kind": "Deployment"}]}))
        app.router.add_get("/api/v1/nodes", listing({"items": [{"metadata": {"name": "n1"}, "status": {
            "conditions": [{"type": "Ready", "status": "True"}], "allocatable": {"cpu": "4", "pods": "110"}}}]}))
        app.router.add_get("/api/v1/pods", listing({"items": []}))
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port, ssl_context=self.authority.server_context(),
                          reuse_address=True).start()

    async def stop(self) -> None:
        if self.hang is not None:
            self.hang.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


@pytest.fixture
async def member(tmp_path: Path) -> AsyncIterator[Member]:
    m = Member(Authority(tmp_path / "ca1", ["127.0.0.1"]))
    await m.start()
    yield m
    await m.stop()


def fixed(credentials: Credentials) -> Callable[[cluster_pb2.Cluster], Awaitable[Credentials]]:
    async def load(_: cluster_pb2.Cluster) -> Credentials:
        return credentials

    return load


@pytest.fixture
async def probes(member: Member) -> AsyncIterator[Callable[..., PushMembers]]:
    opened: list[PushMembers] = []

    def make(credentials: Credentials | None = None, timeout: float = 5.0) -> PushMembers:
        members = PushMembers(fixed(credentials or member.credentials()), timeout, probe_period=1, collect_period=5)
        opened.append(members)
        return members

    yield make
    for members in opened:
        await members.__aexit__(None, None, None)


async def health(members: PushMembers) -> Health:
    return await (await members.get(cluster_pb2.Cluster())).health()


async def test_health_reads_as_karmadas_probe_over_one_kept_alive_connection(
        member: Member, probes: Callable[..., PushMembers]) -> None:
    async with probes() as members:
        for _ in range(5):
            assert await health(members) == Health(online=True, healthy=True)
        assert len(member.connections) == 1, "five probes, one connection"
        member.status = 500
        assert await health(members) == Health(online=True, healthy=False)
        member.status, member.readyz = 200, False
        assert await health(members) == Health(online=True, healthy=True), "/healthz when /readyz is 404"
    async with probes(member.credentials(token="wrong")) as members:
        assert await health(members) == Health(online=False, healthy=False), "401 is offline"
    async with probes(Credentials(f"https://127.0.0.1:{free_port()}", "t1", member.authority.ca_data)) as members:
        assert await health(members) == Health(online=False, healthy=False), "refused"
    async with probes(Credentials(member.server, "t1", "not base64 PEM")) as members:
        assert await health(members) == Health(online=False, healthy=False), "bad CA data"


async def test_a_probe_is_bounded_by_the_timeout_and_collection_uses_one_more_connection(
        member: Member, probes: Callable[..., PushMembers]) -> None:
    async with probes(timeout=0.3) as members:
        reader = await members.get(cluster_pb2.Cluster())
        collected = await collect(reader)
        assert collected.kubernetes_version == "v1.31.0" and collected.complete
        assert collected.api_enablements == [("apps/v1", [("deployments", "Deployment")]), ("v1", [("pods", "Pod")])]
        assert collected.node_summary == {"totalNum": 1, "readyNum": 1}
        assert await reader.health() == Health(online=True, healthy=True)
        assert len(member.connections) == 2, "the probe's connection and the collection's"
        member.hang = asyncio.Event()
        assert await reader.health() == Health(online=False, healthy=False)


async def test_a_rotated_token_or_ca_takes_effect(store: Store, member: Member, tmp_path: Path) -> None:
    async def put_secret(credentials: Credentials) -> None:
        document = secret_document("member1", credentials)

        def change(secret: Any) -> bool:
            secret.content = json.dumps(document).encode()
            return True

        if await store.try_get(SECRET_TYPE, CLUSTER_SECRET_NAMESPACE, "member1") is None:
            await store.create(codec.from_dict(document))
        else:
            await store.mutate(SECRET_TYPE, CLUSTER_SECRET_NAMESPACE, "member1", change)

    cluster = cluster_pb2.Cluster()
    cluster.metadata.name = "member1"
    cluster.spec.api_endpoint = member.server
    cluster.spec.secret_ref.name = "member1"
    cluster.spec.secret_ref.namespace = CLUSTER_SECRET_NAMESPACE
    await put_secret(member.credentials())
    secrets: Informer[Any] = Informer(store, SECRET_TYPE, namespace=CLUSTER_SECRET_NAMESPACE)
    cached = CachedCredentials(store, secrets)
    # Before the informer has it, the Secret is read from the store.
    assert (await cached.load(cluster)).token == "t1"
    watching = asyncio.create_task(secrets.run())
    try:
        await secrets.wait_synced()
        assert secrets.get(f"{CLUSTER_SECRET_NAMESPACE}/member1") is not None, "from now on, read from the cache"
        async with PushMembers(cached.load, 5.0, probe_period=1, collect_period=5) as members:

            async def probe() -> Health:
                return await (await members.get(cluster)).health()

            async def until(wanted: Health) -> None:
                async with asyncio.timeout(30):
                    while await probe() != wanted:
                        await asyncio.sleep(0.02)

            await until(Health(online=True, healthy=True))
            member.token = "t2"
            assert await probe() == Health(online=False, healthy=False), "the old token is refused"
            await put_secret(member.credentials())
            await until(Health(online=True, healthy=True))

            # A new CA: the member's certificate no longer verifies with the old one.
            await member.stop()
            member.authority = Authority(tmp_path / "ca2", ["127.0.0.1"])
            member.connections.clear()
            await member.start()
            assert await probe() == Health(online=False, healthy=False), "the new certificate fails the old CA"
            await put_secret(member.credentials())
            await until(Health(online=True, healthy=True))
    finally:
        watching.cancel()
        await asyncio.gather(watching, return_exceptions=True)
