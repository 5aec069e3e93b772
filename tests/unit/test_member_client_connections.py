"""A member's client keeps a few connections, not one per concurrent request: every HTTPS
connection kept alive holds a 256 KiB read buffer, and the executor's workers apply to every
member at once. Against a real HTTP server on a free port."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from flotilla.member import MemberClient
from flotilla.member.client import _REQUESTS
from flotilla.member.credentials import Credentials
from tests.http_serving import serving


class Server:
    def __init__(self) -> None:
        self.in_flight = 0
        self.most = 0
        self.peers: set[object] = set()
        self.release = asyncio.Event()
        self.full = asyncio.Event()

    async def version(self, request: web.Request) -> web.Response:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        if self.in_flight >= _REQUESTS:
            self.full.set()
        self.peers.add(request.transport.get_extra_info("peername") if request.transport else None)
        await self.release.wait()
        self.in_flight -= 1
        return web.json_response({"gitVersion": "v1.31.0"})


@pytest.fixture
async def server() -> AsyncIterator[tuple[Server, str]]:
    state = Server()
    app = web.Application()
    app.router.add_get("/version", state.version)
    async with serving(app) as url:
        try:
            yield state, url
        finally:
            state.release.set()


async def test_concurrent_requests_share_a_few_connections(server: tuple[Server, str]) -> None:
    state, url = server
    client = MemberClient(Credentials(url, "token"), timeout=30)
    try:
        calls = [asyncio.create_task(client.version()) for _ in range(4 * _REQUESTS)]
        async with asyncio.timeout(30):
            await state.full.wait()
        # The rest wait for a slot rather than opening connections of their own: give them
        # passes of the loop to try.
        for _ in range(50):
            await asyncio.sleep(0)
        assert state.in_flight == _REQUESTS
        state.release.set()
        assert await asyncio.gather(*calls) == ["v1.31.0"] * (4 * _REQUESTS)
        assert state.most == _REQUESTS and len(state.peers) <= _REQUESTS
    finally:
        await client.close()


def test_tls_connections_read_into_a_64_kib_buffer_not_256() -> None:
    import asyncio.sslproto

    assert asyncio.sslproto.SSLProtocol.max_size == 64 * 1024
