"""The simulator as several processes (`python -m sim --processes N`): this parent starts N
children, each serving a disjoint share of the clusters, and serves the one admin API, routing
each cluster's requests to the child that owns it.

One event loop answers every request of its clusters in turn, so a `/readyz` probe waits behind
whatever else its process is doing; a share of the clusters per process shortens that queue
and lets the clusters use every core. Clients see no difference: each cluster keeps its own
port and kubeconfig (the children write them, from the one CA the parent makes first), and the
admin API answers at the parent's address as a single process's would.

A child stops when its standard input closes, so children never outlive the parent, even one
killed outright.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from flotilla.aio.tasks import cancel_and_wait
from sim.admin_api import refusal, write_token
from sim.tls import ensure_ca

# How long a child may take to serve its clusters (a hundred TLS listeners, kubeconfigs written)
# on a loaded machine, and to stop.
_START_TIMEOUT = 120.0
_STOP_TIMEOUT = 10.0
_PROXY_TIMEOUT = aiohttp.ClientTimeout(total=30)
_SIM_ROOT = str(Path(__file__).resolve().parents[1])


class ChildFailed(OSError):
    """A child process could not start; the message says which and why."""


class _Child:
    def __init__(self, index: int, names: list[str]) -> None:
        self.index = index
        self.names = names
        self.process: asyncio.subprocess.Process | None = None
        self.admin = ""  # host:port of the child's own admin API

    async def start(self, args: list[str]) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [_SIM_ROOT, os.environ.get("PYTHONPATH")]))}
        self.process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "sim", *args, "--child", str(self.index),
            "--names", ",".join(self.names), "--clusters", "0",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=env)
        assert self.process.stdout is not None
        try:
            line = await asyncio.wait_for(self.process.stdout.readline(), _START_TIMEOUT)
        except TimeoutError:
            raise ChildFailed(f"sim process {self.index} did not start within {_START_TIMEOUT:g}s") from None
        if not line:
            code = await self.process.wait()
            raise ChildFailed(f"sim process {self.index} exited with code {code} before serving (see its errors above)")
        self.admin = json.loads(line)["admin"]

    async def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.returncode is not None:
            return
        if process.stdin is not None:  # closing it is the child's signal to stop
            process.stdin.close()
        with contextlib.suppress(ProcessLookupError):
            process.terminate()
        try:
            await asyncio.wait_for(process.wait(), _STOP_TIMEOUT)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()


class ShardedSim:
    """The parent: `start` launches the children and serves the admin API on `host:port`."""

    def __init__(self, child_args: list[str], names: list[str], processes: int, data_dir: Path,
                 host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = 0
        self.data_dir = data_dir
        self._child_args = child_args
        # Round robin, so every process gets as many clusters as the others, give or take one.
        self.children = [_Child(i, names[i::processes]) for i in range(processes)]
        self.owner = {name: self.children[i % processes] for i, name in enumerate(names)}
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        # The admin API's token (sim/admin_api.py): the parent's and its children's alike.
        self.admin_token = ""

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pids(self) -> list[int]:
        return [c.process.pid for c in self.children if c.process is not None]

    async def start(self, port: int = 0) -> None:
        ensure_ca(self.data_dir / "pki")
        self.admin_token = write_token(self.data_dir)  # before the children, which read it
        try:
            await asyncio.gather(*(child.start(self._child_args) for child in self.children))
            self._session = aiohttp.ClientSession(timeout=_PROXY_TIMEOUT)
            app = web.Application()
            app.router.add_get("/admin/clusters", self._list)
            app.router.add_post("/admin/clusters", self._add)
            app.router.add_route("*", "/admin/clusters/{name}", self._route)
            app.router.add_route("*", "/admin/clusters/{name}/{tail:.*}", self._route)
            self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
            await self._runner.setup()
            sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((self.host, port))
            except OSError:
                sock.close()
                raise
            await web.SockSite(self._runner, sock).start()
            self.port = sock.getsockname()[1]
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
        session, self._session = self._session, None
        if session is not None:
            await session.close()
        await asyncio.gather(*(child.stop() for child in self.children))

    async def watch_children(self) -> None:
        """Raises ChildFailed once any child exits: its clusters are gone, so the parent stops."""
        waits = {asyncio.ensure_future(c.process.wait()): c for c in self.children if c.process is not None}
        try:
            done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            await cancel_and_wait(*waits)
        child = waits[next(iter(done))]
        raise ChildFailed(f"sim process {child.index} exited with code {next(iter(done)).result()}; "
                          "its clusters are gone")

    # -- the admin API ------------------------------------------------------------------------------

    async def _list(self, request: web.Request) -> web.Response:
        answers = await asyncio.gather(*(self._call(c, "GET", "/admin/clusters") for c in self.children))
        for status, body in answers:
            if status != 200:
                return _json(body, status)
        found = {c["name"]: c for _, body in answers for c in body.get("clusters", [])}
        # In the order they were given (then added), as one process lists them.
        return _json({"clusters": [found[name] for name in self.owner if name in found]})

    async def _add(self, request: web.Request) -> web.Response:
        if (refused := refusal(request, self.admin_token)) is not None:
            return refused
        raw = await request.read()
        with contextlib.suppress(ValueError, AttributeError):
            name = json.loads(raw or b"{}").get("name")
            if isinstance(name, str) and name in self.owner:
                return _json({"error": f"cluster {name!r} already exists"}, 409)
        child = min(self.children, key=lambda c: len(c.names))
        status, body = await self._call(child, "POST", "/admin/clusters", raw)
        if status == 201:
            child.names.append(body["name"])
            self.owner[body["name"]] = child
        return _json(body, status)

    async def _route(self, request: web.Request) -> web.Response:
        if (refused := refusal(request, self.admin_token)) is not None:
            return refused
        name = request.match_info["name"]
        child = self.owner.get(name)
        if child is None:
            return _json({"error": f"no cluster {name!r}"}, 404)
        status, body = await self._call(child, request.method, request.path, await request.read())
        return _json(body, status)

    async def _call(self, child: _Child, method: str, path: str, body: bytes = b"") -> tuple[int, Any]:
        assert self._session is not None
        try:
            headers = {"Content-Type": "application/json", "Authorization": f"Bearer {self.admin_token}"}
            async with self._session.request(method, f"http://{child.admin}{path}", data=body or None,
                                             headers=headers) as response:
                return response.status, await response.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError, ValueError) as e:
            return 502, {"error": f"sim process {child.index} did not answer: {e or type(e).__name__}"}


def _json(body: Any, status: int = 200) -> web.Response:
    return web.Response(body=json.dumps(body).encode(), status=status, content_type="application/json")
