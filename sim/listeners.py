"""One HTTPS port per simulated cluster, every port served by one aiohttp runner.

A cluster is told apart by the port a request arrived on, so its URL has no path prefix and
`kubectl get --raw /readyz` reaches it. A port costs one listening socket; one process serves
a hundred clusters this way as cheaply as through one port.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Awaitable, Callable

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_BACKLOG = 128


class PortTaken(OSError):
    pass


class ClusterListeners:
    def __init__(self, host: str, handler: Handler, max_body: int) -> None:
        self.host = host
        self._handler = handler
        self._max_body = max_body
        self._runner: web.AppRunner | None = None
        self._tls: ssl.SSLContext | None = None
        self._names: dict[int, str] = {}  # port -> cluster
        self._starting: list[asyncio.Task[None]] = []

    async def start(self, tls: ssl.SSLContext) -> None:
        app = web.Application(client_max_size=self._max_body)
        app.router.add_route("*", "/{tail:.*}", self._handler)
        # handler_cancellation: a client giving up on a hanging ("unreachable") request ends it.
        runner = web.AppRunner(app, handler_cancellation=True, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        self._runner, self._tls = runner, tls

    def open(self, name: str, port: int, hint: str = "") -> int:
        """Listen for cluster `name` on `port` (0: any free port) and return the port. The socket
        listens before this returns, so a client connecting at once waits in the backlog rather
        than being refused. `hint` ends the error when the port is taken."""
        if self._runner is None or self._tls is None:
            raise RuntimeError("listeners not started")
        sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((self.host, port))
            except OSError as e:
                which = f"{self.host}:{port}, the port its kubeconfig names" if port else f"{self.host}"
                raise PortTaken(f"cluster {name!r} cannot listen on {which}: {e.strerror or e}"
                                f"{f' ({hint})' if port and hint else ''}") from None
            sock.listen(_BACKLOG)
        except BaseException:
            sock.close()
            raise
        bound = int(sock.getsockname()[1])
        self._names[bound] = name
        site = web.SockSite(self._runner, sock, ssl_context=self._tls)
        self._starting.append(asyncio.ensure_future(site.start()))
        return bound

    async def ready(self) -> None:
        """Wait until every opened port is being served."""
        starting, self._starting = self._starting, []
        await asyncio.gather(*starting)

    def cluster_of(self, request: web.Request) -> str | None:
        sockname = request.transport.get_extra_info("sockname") if request.transport is not None else None
        return self._names.get(sockname[1]) if sockname else None

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        starting, self._starting = self._starting, []
        for task in starting:
            task.cancel()
        await asyncio.gather(*starting, return_exceptions=True)
        self._names.clear()
        if runner is not None:
            await runner.cleanup()
