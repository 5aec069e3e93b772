"""Issue 36: a Cluster's spec.proxyURL and spec.proxyHeader carry every request to that member.

A small HTTP CONNECT proxy stands between the plane and a simulated member whose spec.apiEndpoint
(a port nothing listens on) is reachable only through it: the executor's client (MemberClient)
and the status service's (PushMembers: the probe thread's session and collection's) reach it,
the prober reads it Ready, and the proxy saw every tunnel and the proxyHeader."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING

import pytest

from flotilla.aio.clock import FakeClock
from flotilla.api import codec
from flotilla.api.conditions import TRUE
from flotilla.api.v1 import cluster_pb2
from flotilla.clusterstatus.clients import MemberClients
from flotilla.clusterstatus.collect import collect
from flotilla.clusterstatus.prober import ClusterProber
from flotilla.clusterstatus.push_members import PushMembers
from flotilla.clusterstatus.thresholds import Thresholds
from flotilla.member import Credentials, Health, load_kubeconfig
from flotilla.rules.cluster_secrets import load_credentials, secret_document
from flotilla.store.embedded import free_port
from flotilla.store.memory import MemoryStore

if TYPE_CHECKING:
    from tests.sim_fixtures import StartSim

pytestmark = pytest.mark.timeout(30)
pytest_plugins = ["tests.sim_fixtures"]


@dataclass
class ConnectProxy:
    """An HTTP proxy that only tunnels (CONNECT), to the address `routes` gives the requested
    host:port (so a member can sit at an address only the proxy knows), and records each tunnel's
    target and headers. Anything but CONNECT is answered 405."""

    routes: dict[str, tuple[str, int]]
    tls: ssl.SSLContext | None = None  # an https:// proxy
    seen: list[tuple[str, dict[str, list[str]]]] = field(default_factory=list)
    port: int = 0
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            method, target, _ = head[0].split(" ", 2)
            headers: dict[str, list[str]] = {}
            for line in head[1:]:
                if line:
                    name, _, value = line.partition(":")
                    headers.setdefault(name.strip().lower(), []).append(value.strip())
            self.seen.append((f"{method} {target}", headers))
            if method != "CONNECT" or target not in self.routes:
                writer.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
                await writer.drain()
                return
            host, port = self.routes[target]
            upstream_reader, upstream_writer = await asyncio.open_connection(host, port)
            writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            await writer.drain()
            await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))
        except (OSError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            writer.close()
            self._tasks.discard(task)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            writer.close()


@pytest.fixture(params=["http", "https"])
async def proxied(start_sim: StartSim, request: pytest.FixtureRequest
                  ) -> AsyncIterator[tuple[ConnectProxy, Credentials, str]]:
    """(the proxy, the member's kubeconfig credentials, an apiEndpoint only the proxy reaches).
    An https:// proxy's certificate is checked as the member's is (its CA), as client-go checks
    it: here the simulator's CA signs both."""
    server = await start_sim("member1")
    credentials = load_kubeconfig(server.kubeconfig_path("member1"))
    real_port = int(credentials.server.rsplit(":", 1)[1])
    hidden = free_port()  # nothing listens here: only the proxy knows where it leads
    assert server.tls is not None
    tls = server.tls.server_context() if request.param == "https" else None
    proxy = ConnectProxy({f"127.0.0.1:{hidden}": ("127.0.0.1", real_port)}, tls)
    await proxy.start()
    yield proxy, credentials, f"https://127.0.0.1:{hidden}"
    await proxy.stop()


def cluster_of(endpoint: str, proxy_url: str = "", proxy_header: dict[str, str] | None = None) -> cluster_pb2.Cluster:
    cluster = cluster_pb2.Cluster()
    cluster.metadata.name = "member1"
    cluster.spec.sync_mode = "Push"
    cluster.spec.api_endpoint = endpoint
    cluster.spec.secret_ref.namespace, cluster.spec.secret_ref.name = "karmada-cluster", "member1"
    cluster.spec.proxy_url = proxy_url
    cluster.spec.proxy_header.update(proxy_header or {})
    return cluster


async def test_a_member_reachable_only_through_its_proxy_reads_ready(
        proxied: tuple[ConnectProxy, Credentials, str], memory_store: MemoryStore) -> None:
    proxy, kubeconfig, endpoint = proxied
    await memory_store.create(codec.from_dict(secret_document("member1", kubeconfig)))
    header = {"Proxy-Authorization": "Basic ZmxvdGlsbGE6c2VjcmV0", "X-Tenant": "a,b"}
    direct = cluster_of(endpoint)
    through = cluster_of(endpoint, proxy.url, header)

    credentials = await load_credentials(memory_store, through)
    assert credentials.proxy_url == proxy.url
    assert "ZmxvdGlsbGE6c2VjcmV0" not in repr(credentials), "what authenticates to the proxy is not logged"

    clients = MemberClients(memory_store, timeout=5.0)
    try:
        # Without the proxy the member is unreachable: the probe reads it offline.
        assert await (await clients.get(direct)).health() == Health(online=False, healthy=False)
        assert proxy.seen == []
        # Through it, the executor's client reaches it for everything it does.
        client = await clients.get(through)
        assert await client.health() == Health(online=True, healthy=True)
        assert await client.list_nodes()
        applied = await client.apply({"apiVersion": "v1", "kind": "ConfigMap",
                                      "metadata": {"name": "via-proxy", "namespace": "default"}, "data": {"a": "1"}})
        assert applied["data"] == {"a": "1"}
    finally:
        await clients.close()

    # The status service: the probe thread's session, collection's, and the prober's verdict.
    clock = FakeClock()
    prober = ClusterProber(clock, Thresholds(success=timedelta(0), failure=timedelta(0)))
    async with PushMembers(lambda cluster: load_credentials(memory_store, cluster), timeout=5.0,
                           probe_period=1, collect_period=5) as members:
        update = await prober.probe("member1", through.status, lambda: members.get(through))
        assert update.ready.status == TRUE, update.ready
        assert update.collected is not None and update.collected.node_summary["totalNum"] >= 1
        assert (await collect(await members.get(through))).complete

        unproxied = await prober.probe("member1", direct.status, lambda: members.get(direct))
        assert unproxied.ready.status != TRUE, "the same member without its proxy is not Ready"

    assert proxy.seen, "every request went through the proxy"
    for target, headers in proxy.seen:
        assert target == f"CONNECT {endpoint.removeprefix('https://')}"
        assert headers["proxy-authorization"] == ["Basic ZmxvdGlsbGE6c2VjcmV0"]
        assert headers["x-tenant"] == ["a", "b"], "a comma-separated value is one header per value, as Karmada"


def test_credentials_carry_the_proxy_and_hide_its_secrets() -> None:
    credentials = Credentials("https://m:6443", "t", proxy_url="http://user:pw@proxy.example:3128",
                              proxy_header=(("Proxy-Authorization", "Basic c2VjcmV0"), ("K", "v1, v2")))
    assert credentials.proxy_headers() == [("Proxy-Authorization", "Basic c2VjcmV0"), ("K", "v1"), ("K", "v2")]
    shown = repr(credentials)
    assert "pw" not in shown and "c2VjcmV0" not in shown and "proxy.example:3128" in shown
    assert Credentials("https://m:6443", "t") != credentials, "a changed proxy rebuilds a member's client"
