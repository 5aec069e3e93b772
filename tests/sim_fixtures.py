"""Fixtures for tests of the simulator and the member client: in-process SimServers on free
ports with their own data directories, stopped when the test ends.

Test modules load them with `pytest_plugins = ["tests.sim_fixtures"]`.
"""

from __future__ import annotations

import base64
import json
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from flotilla.aio.clock import Clock, FakeClock
from flotilla.member import MemberClient, load_kubeconfig
from sim import SimCluster, SimServer

StartSim = Callable[..., Awaitable[SimServer]]


@pytest.fixture
def sim_clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def start_sim(tmp_path: Path, sim_clock: FakeClock) -> AsyncIterator[StartSim]:
    """`await start_sim("member1", ..., clock=..., **SimServer options)`: a started server on a free
    port (the OS picks it) with the given clusters; FakeClock `sim_clock` unless told otherwise."""
    started: list[SimServer] = []

    async def start(*names: str, clock: Clock | None = None, **options: Any) -> SimServer:
        server = SimServer(clock or sim_clock, tmp_path / f"sim-{len(started)}", **options)
        for name in names or ("member1",):
            server.add_cluster(name)
        started.append(server)
        await server.start()
        return server

    yield start
    for server in started:
        await server.stop()


@pytest.fixture
async def member_client() -> AsyncIterator[Callable[..., MemberClient]]:
    """`member_client(server, "member1", timeout=...)`: a MemberClient built from the cluster's
    kubeconfig; closed when the test ends."""
    clients: list[MemberClient] = []

    def make(server: SimServer, name: str = "member1", timeout: float = 5.0) -> MemberClient:
        client = MemberClient(load_kubeconfig(server.kubeconfig_path(name)), timeout=timeout)
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.close()


def cluster_tls(cluster: SimCluster) -> ssl.SSLContext:
    """A client TLS context trusting the CA in the cluster's kubeconfig."""
    assert cluster.kubeconfig is not None, "the server has not started"
    ca = base64.b64decode(load_kubeconfig(cluster.kubeconfig).ca_data).decode()
    return ssl.create_default_context(cadata=ca)


class KubeHttp:
    """Raw HTTPS against one simulated cluster, for asserting on status codes and bodies."""

    def __init__(self, session: aiohttp.ClientSession, cluster: SimCluster, token: str | None = None) -> None:
        self.session = session
        self.cluster = cluster
        self.token = cluster.token if token is None else token
        self.tls = cluster_tls(cluster)
        self.headers: dict[str, list[str]] = {}  # of the last answer: name -> values

    async def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json",
                      accept: str = "application/json", **params: str) -> tuple[int, Any]:
        headers = {"Content-Type": content_type, "Accept": accept}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        data = None if body is None else (body if isinstance(body, str) else json.dumps(body))
        async with self.session.request(method, self.cluster.url + path, data=data, headers=headers,
                                        params=params or None, ssl=self.tls) as response:
            text = await response.text()
            self.headers = {}
            for name, value in response.headers.items():
                self.headers.setdefault(name, []).append(value)
            try:
                return response.status, json.loads(text)
            except ValueError:
                return response.status, text

    async def get(self, path: str, **params: str) -> tuple[int, Any]:
        return await self.request("GET", path, **params)

    async def ok(self, method: str, path: str, body: Any = None, **kwargs: Any) -> Any:
        """The body of a request that must succeed."""
        status, answer = await self.request(method, path, body, **kwargs)
        assert 200 <= status < 300, (status, answer)
        return answer


@pytest.fixture
async def kube_http() -> AsyncIterator[Callable[..., KubeHttp]]:
    """`kube_http(cluster, token=None)`: a KubeHttp on a session closed when the test ends."""
    async with aiohttp.ClientSession() as session:
        yield lambda cluster, token=None: KubeHttp(session, cluster, token)
