"""The simulator's admin API (server side): list and add clusters, inject and clear faults.

Plain HTTP on loopback, so it is guarded against what else runs on the machine:
- Reads (GET) are open: the cluster list is the simulator's health check (`flotillactl status`,
  its etcd record's `health`), it changes nothing, and a web page's cross-origin read gets no
  CORS header, so the page never sees the answer.
- A change (POST: a fault, a new cluster) needs the token the simulator writes at every start to
  `<data dir>/admin-token` (mode 0600, flotilla.security.tls.write_file) as
  `Authorization: Bearer <token>` (401 otherwise): only who can read that file changes members,
  not another local user, not a web page. And its body must be JSON, `Content-Type:
  application/json` (415 otherwise): a cross-origin page can send text/plain without asking, but
  not JSON, which takes a CORS preflight this server never grants. The client that does all this
  is flotilla.plane.simclient.
"""

from __future__ import annotations

import hmac
import json
import secrets
from pathlib import Path
from typing import Any, Protocol

from aiohttp import web

from flotilla.plane.simclient import TOKEN_FILE
from flotilla.security.tls import write_file
from sim.cluster import SimCluster
from sim.errors import ApiError

# Methods that change nothing, answered without the token.
READS = frozenset({"GET", "HEAD"})


def write_token(data_dir: Path) -> str:
    """A fresh token in `<data dir>/admin-token`, readable by its owner only: made at every start,
    so one read from an earlier run (or a copy of the data dir) does not outlive it."""
    data_dir.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    write_file(data_dir / TOKEN_FILE, f"{token}\n".encode(), private=True)
    return token


def read_token(data_dir: Path) -> str:
    """The token a sharded simulator's parent wrote, for its child processes (sim/shards.py)."""
    return (data_dir / TOKEN_FILE).read_text().strip()


def refusal(request: web.Request, token: str) -> web.Response | None:
    """Why a request is refused (401: no or a wrong token; 415: not JSON); None when it may go on.
    A read needs neither (see the module's docstring); an empty token refuses every change."""
    if request.method in READS:
        return None
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if not token or scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), token.encode()):
        answer = _ok({"error": f"a change needs the token the simulator wrote to {TOKEN_FILE} in its data "
                               "directory, as Authorization: Bearer <token>"}, 401)
        answer.headers["WWW-Authenticate"] = 'Bearer realm="flotilla-sim-admin"'
        return answer
    if request.content_type != "application/json":
        return _ok({"error": f"Content-Type must be application/json, not {request.content_type}"}, 415)
    return None


class Fleet(Protocol):
    """What the admin API manages (the server, sim/server.py): its clusters."""

    clusters: dict[str, SimCluster]
    # What a change must carry (see `refusal`); set when the server starts.
    admin_token: str

    def add_cluster(self, name: str, nodes: int | None = None, cpu: str | None = None, memory: str | None = None,
                    pods: int | None = None) -> SimCluster: ...

    async def ready(self) -> None: ...


class _BadRequest(Exception):
    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def admin_routes(server: Fleet) -> list[web.RouteDef]:
    async def list_clusters(request: web.Request) -> web.Response:
        return _ok({"clusters": [c.info() for c in server.clusters.values()]})

    async def add_cluster(request: web.Request) -> web.Response:
        body = await _json(request)
        name = _field(body, "name", str)
        if name in server.clusters:
            raise _BadRequest(f"cluster {name!r} already exists", 409)
        try:
            cluster = server.add_cluster(name, nodes=_optional(body, "nodes", int), cpu=_optional(body, "cpu", str),
                                         memory=_optional(body, "memory", str), pods=_optional(body, "pods", int))
        except (ValueError, OSError) as e:
            raise _BadRequest(str(e)) from e
        await server.ready()
        return _ok(cluster.info(), 201)

    async def get_cluster(request: web.Request) -> web.Response:
        return _ok(_cluster(request).info())

    async def set_fault(request: web.Request) -> web.Response:
        cluster = _cluster(request)
        body = await _json(request)
        latency = _optional(body, "latency", (int, float))
        try:
            cluster.set_fault(_field(body, "fault", str), None if latency is None else float(latency))
        except ValueError as e:
            raise _BadRequest(str(e)) from e
        return _ok(cluster.info())

    async def set_app_fault(request: web.Request) -> web.Response:
        cluster = _cluster(request)
        body = await _json(request)
        cluster.set_app_fault(_field(body, "namespace", str), _field(body, "name", str),
                              _field(body, "healthy", bool), _optional(body, "kind", str))
        return _ok(cluster.info())

    def _cluster(request: web.Request) -> Any:
        name = request.match_info["name"]
        if name not in server.clusters:
            raise _BadRequest(f"no cluster {name!r}", 404)
        return server.clusters[name]

    def guarded(handler: Any) -> Any:
        async def serve(request: web.Request) -> web.Response:
            refused = refusal(request, server.admin_token)
            if refused is not None:
                return refused
            try:
                return await handler(request)
            except _BadRequest as e:
                return _ok({"error": str(e)}, e.status)
            except ApiError as e:
                return _ok({"error": e.message}, e.code)
        return serve

    return [
        web.get("/admin/clusters", guarded(list_clusters)),
        web.post("/admin/clusters", guarded(add_cluster)),
        web.get("/admin/clusters/{name}", guarded(get_cluster)),
        web.post("/admin/clusters/{name}/fault", guarded(set_fault)),
        web.post("/admin/clusters/{name}/app-fault", guarded(set_app_fault)),
    ]


def _ok(body: Any, status: int = 200) -> web.Response:
    return web.Response(body=json.dumps(body).encode(), status=status, content_type="application/json")


async def _json(request: web.Request) -> dict[str, Any]:
    try:
        body = json.loads(await request.read() or b"{}")
    except ValueError as e:
        raise _BadRequest(f"body is not JSON: {e}") from e
    if not isinstance(body, dict):
        raise _BadRequest("body must be a JSON object")
    return body


def _field(body: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    if key not in body:
        raise _BadRequest(f"missing field {key!r}")
    return _typed(body, key, kind)


def _optional(body: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    return None if body.get(key) is None else _typed(body, key, kind)


def _typed(body: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    value = body[key]
    # bool is an int in Python; a JSON true is not a count.
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise _BadRequest(f"field {key!r} has the wrong type")
    return value
