"""Client for the simulator's HTTP admin API (what `flotilla sim fault` uses).

The library talks to the simulator only as a separate process (`python -m sim`) over this API,
never by importing it; `sim.admin` re-exports this module for the simulator's own users.
`address` is the simulator's "host:port" (as registered in etcd) or a full http:// URL.

Reads are open; a change (a fault, a new cluster) carries the token the simulator wrote to
`<its data dir>/admin-token` (mode 0600) when it started, as `Authorization: Bearer`, so that
only someone who can read that file changes members: not a web page in a browser on the same
machine, nor another local user. The token of a call comes from, in order: `token`; the
simulator's data dir (`data_dir`, which its etcd registration records); FLOTILLA_SIM_TOKEN_FILE
(which `flotilla up`, the demo and the benchmarks set for their own simulator: local_plane.py);
the current context, when its simulator is the one called.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp

from flotilla.security.context import ContextError, current_context

__all__ = [
    "ENV_TOKEN_FILE",
    "TOKEN_FILE",
    "AdminError",
    "add_cluster",
    "list_clusters",
    "read_token",
    "set_app_fault",
    "set_fault",
    "token_file",
]

TIMEOUT = 10.0
# In the simulator's data dir (its --data-dir; `<plane data dir>/sim` for `flotilla up`).
TOKEN_FILE = "admin-token"
ENV_TOKEN_FILE = "FLOTILLA_SIM_TOKEN_FILE"
# Where `flotilla up` runs its simulator, below the plane's data dir (local_plane.py's sim_dir).
PLANE_SIM_DIR = "sim"


class AdminError(Exception):
    """The simulator could not be reached or refused the request; the message says which."""


def token_file(sim_data_dir: str | Path) -> Path:
    return Path(sim_data_dir) / TOKEN_FILE


def read_token(path: str | Path) -> str:
    """The token in a token file; AdminError naming the file when it cannot be read."""
    try:
        token = Path(path).read_text().strip()
    except OSError as e:
        raise AdminError(f"the simulator's admin token {path} cannot be read: {e.strerror or e}") from e
    if not token:
        raise AdminError(f"the simulator's admin token {path} is empty")
    return token


async def set_fault(address: str, cluster: str, fault: str, latency: float | None = None, *,
                    token: str | None = None, data_dir: str | Path | None = None) -> dict[str, Any]:
    """fault: "down" | "unhealthy" | "unreachable" | "slow" | "recover". Returns the cluster's state."""
    body: dict[str, Any] = {"fault": fault}
    if latency is not None:
        body["latency"] = latency
    return await _call(address, "POST", f"/admin/clusters/{quote(cluster, safe='')}/fault", body,
                       _token(address, token, data_dir))


async def set_app_fault(address: str, cluster: str, namespace: str, name: str, healthy: bool,
                        kind: str | None = None, *, token: str | None = None,
                        data_dir: str | Path | None = None) -> dict[str, Any]:
    """Make a workload's pods unready (healthy=False) or let them recover (healthy=True)."""
    body: dict[str, Any] = {"namespace": namespace, "name": name, "healthy": healthy}
    if kind:
        body["kind"] = kind
    return await _call(address, "POST", f"/admin/clusters/{quote(cluster, safe='')}/app-fault", body,
                       _token(address, token, data_dir))


async def list_clusters(address: str) -> list[dict[str, Any]]:
    """Every cluster with its URL, kubeconfig path, fault, latency and application faults (open: no token)."""
    answer = await _call(address, "GET", "/admin/clusters")
    return list(answer.get("clusters") or [])


async def add_cluster(address: str, name: str, *, token: str | None = None,
                      data_dir: str | Path | None = None) -> dict[str, Any]:
    return await _call(address, "POST", "/admin/clusters", {"name": name}, _token(address, token, data_dir))


def _token(address: str, token: str | None, data_dir: str | Path | None) -> str:
    """The token for a change (see the module's docstring); "" when none is known, which the
    simulator answers with 401, naming the file to read."""
    if token:
        return token
    if data_dir:
        return read_token(token_file(data_dir))
    if path := os.environ.get(ENV_TOKEN_FILE):
        return read_token(path)
    context = None
    with contextlib.suppress(ContextError):
        context = current_context()
    if context is not None and context.sim_address and _host_port(context.sim_address) == _host_port(address):
        return read_token(token_file(Path(context.data_dir) / PLANE_SIM_DIR))
    return ""


def _host_port(address: str) -> str:
    return address.rstrip("/").split("://", 1)[-1]


def _base(address: str) -> str:
    address = address.rstrip("/")
    return address if "://" in address else f"http://{address}"


async def _call(address: str, method: str, path: str, body: dict[str, Any] | None = None,
                token: str = "") -> dict[str, Any]:
    url = _base(address) + path
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=TIMEOUT)) as session:
            # json= sends Content-Type: application/json, which the simulator requires of a change.
            async with session.request(method, url, json=body, headers=headers) as response:
                decoded: object
                try:
                    decoded = await response.json(content_type=None)
                except ValueError:
                    decoded = {"error": (await response.text())[:200]}
                # Every admin answer is a JSON object; anything else is reported as it came.
                answer: dict[str, Any] = decoded if isinstance(decoded, dict) else {"error": str(decoded)[:200]}
                if response.status >= 400:
                    raise AdminError(f"{url}: HTTP {response.status}: {answer.get('error', answer)}")
                return answer
    except aiohttp.ClientError as e:
        raise AdminError(f"{url}: simulator unreachable: {e}") from e
    except TimeoutError as e:
        raise AdminError(f"{url}: no answer within {TIMEOUT:g}s") from e
