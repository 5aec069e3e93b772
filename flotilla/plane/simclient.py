"""Client for the simulator's HTTP admin API (what `flotilla sim fault` uses).

The library talks to the simulator only as a separate process (`python -m sim`) over this API,
never by importing it; `sim.admin` re-exports this module for the simulator's own users.
`address` is the simulator's "host:port" (as registered in etcd) or a full http:// URL.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import aiohttp

__all__ = ["AdminError", "add_cluster", "list_clusters", "set_app_fault", "set_fault"]

TIMEOUT = 10.0


class AdminError(Exception):
    """The simulator could not be reached or refused the request; the message says which."""


async def set_fault(address: str, cluster: str, fault: str, latency: float | None = None) -> dict[str, Any]:
    """fault: "down" | "unhealthy" | "unreachable" | "slow" | "recover". Returns the cluster's state."""
    body: dict[str, Any] = {"fault": fault}
    if latency is not None:
        body["latency"] = latency
    return await _call(address, "POST", f"/admin/clusters/{quote(cluster, safe='')}/fault", body)


async def set_app_fault(address: str, cluster: str, namespace: str, name: str, healthy: bool,
                        kind: str | None = None) -> dict[str, Any]:
    """Make a workload's pods unready (healthy=False) or let them recover (healthy=True)."""
    body: dict[str, Any] = {"namespace": namespace, "name": name, "healthy": healthy}
    if kind:
        body["kind"] = kind
    return await _call(address, "POST", f"/admin/clusters/{quote(cluster, safe='')}/app-fault", body)


async def list_clusters(address: str) -> list[dict[str, Any]]:
    """Every cluster with its URL, kubeconfig path, fault, latency and application faults."""
    answer = await _call(address, "GET", "/admin/clusters")
    return list(answer.get("clusters") or [])


async def add_cluster(address: str, name: str) -> dict[str, Any]:
    return await _call(address, "POST", "/admin/clusters", {"name": name})


def _base(address: str) -> str:
    address = address.rstrip("/")
    return address if "://" in address else f"http://{address}"


async def _call(address: str, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    url = _base(address) + path
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=TIMEOUT)) as session:
            async with session.request(method, url, json=body) as response:
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
