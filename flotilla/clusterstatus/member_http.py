"""What the status service reads from a Push member, over at most one kept-alive HTTPS
connection per member: `/readyz`, and now and then its version, discovery, nodes and pods.

Not `MemberClient`, which keeps a session and a pool per member for the executor's parallel
applies: discovery's reads in parallel would leave several TLS connections open per member, each
holding asyncio's 256 KiB read buffer, and at a hundred members those buffers would be most of
the status service's memory (docs/performance.md, "What the defaults rest on"). Here one aiohttp
session per event loop serves every member, its connector holds one connection per member (the
pool is keyed by host, port and TLS context), and a member's reads go one after another. The
probe's reading, the TLS settings and the errors (`MemberError`) are `MemberClient`'s own.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Any

import aiohttp

import flotilla
from flotilla.api import jsonbytes
from flotilla.member import Credentials, Health, MemberError
from flotilla.member.client import probe_health, ssl_context
from flotilla.member.discovery import AGGREGATED_ACCEPT, api_enablements, group_versions, resource_lists

_USER_AGENT = f"flotilla/{flotilla.__version__}"


class MemberSession:
    """One aiohttp session for every member, made on first use inside the loop that uses it (an
    aiohttp session belongs to one loop). `timeout` bounds each request, connect to last byte;
    an idle connection is kept `keepalive` seconds, longer than the period of the reads that
    reuse it."""

    def __init__(self, timeout: float, keepalive: float) -> None:
        self.timeout = aiohttp.ClientTimeout(total=timeout)
        self.keepalive = keepalive
        self._session: aiohttp.ClientSession | None = None
        # Per member (its server URL): the aggregated discovery last read, by the ETags of its
        # two documents, so an unchanged member answers 304 and nothing is decoded again.
        self.discovery: dict[str, Discovered] = {}

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=0, limit_per_host=1, keepalive_timeout=self.keepalive)
            self._session = aiohttp.ClientSession(connector=connector, timeout=self.timeout,
                                                  headers={"User-Agent": _USER_AGENT})
        return self._session

    async def get(self, credentials: Credentials, path: str, operation: str,
                  accept: str = "application/json", etag: str = "") -> Answer:
        """GET `path` (If-None-Match `etag`, when given): the answer, whatever its status;
        MemberError when there is none."""
        server = credentials.server.rstrip("/")
        try:
            tls = ssl_context(credentials.ca_data, credentials.insecure_skip_tls_verify)
        except (ValueError, ssl.SSLError) as e:  # bad base64 or PEM in the CA data
            raise MemberError(server, operation, f"invalid certificate authority: {e}") from e
        headers = {"Accept": accept}
        if etag:
            headers["If-None-Match"] = etag
        if credentials.token:
            headers["Authorization"] = f"Bearer {credentials.token}"
        try:
            async with self._open().get(f"{server}{path}", headers=headers, ssl=tls) as response:
                return Answer(response.status, await response.read(), response.headers.get("ETag", ""))
        except TimeoutError as e:
            raise MemberError(server, operation, f"timed out after {self.timeout.total:g}s") from e
        except (aiohttp.ClientError, OSError) as e:
            raise MemberError(server, operation, f"unreachable: {e or type(e).__name__}") from e

    async def health(self, credentials: Credentials) -> Health:
        """Karmada's probe, read as `MemberClient.health` reads it."""
        async def status_of(path: str) -> int:
            return (await self.get(credentials, path, f"GET {path}", accept="*/*")).status

        return await probe_health(status_of)

    async def get_json(self, credentials: Credentials, path: str, operation: str) -> dict[str, Any]:
        return _json_of(credentials, operation, await self.get(credentials, path, operation))

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    etag: str = ""


@dataclass(frozen=True)
class Discovered:
    """A member's API enablements, and the ETags of the two documents they were read from."""

    core_etag: str
    groups_etag: str
    enablements: list[tuple[str, list[tuple[str, str]]]]


def _json_of(credentials: Credentials, operation: str, answer: Answer) -> dict[str, Any]:
    if answer.status != 200:
        raise MemberError(credentials.server, operation,
                          f"HTTP {answer.status}: {answer.body[:200].decode(errors='replace')}", status=answer.status)
    try:
        data = jsonbytes.loads(answer.body)
    except ValueError as e:
        raise MemberError(credentials.server, operation, f"not JSON: {e}") from e
    if not isinstance(data, dict):
        raise MemberError(credentials.server, operation, f"expected a JSON object, got {str(data)[:200]!r}")
    return data


@dataclass(frozen=True)
class MemberReader:
    """One member as `ClusterProber` reads it (health, then what `collect` lists)."""

    http: MemberSession
    credentials: Credentials

    async def health(self) -> Health:
        return await self.http.health(self.credentials)

    async def version(self) -> str:
        return str((await self._get("/version", "get version")).get("gitVersion", ""))

    async def api_enablements(self) -> list[tuple[str, list[tuple[str, str]]]]:
        """As `MemberClient.api_enablements`: two requests where the member serves aggregated
        discovery, else one group/version after another on one connection. The aggregated
        documents are asked for with the ETags last seen, as client-go's discovery does: while
        the member's APIs are unchanged both answers are 304 and the last result stands."""
        server = self.credentials.server
        known = self.http.discovery.get(server)
        core_answer = await self._discover("/api", "discover API versions", known.core_etag if known else "")
        groups_answer = await self._discover("/apis", "discover API groups", known.groups_etag if known else "")
        if known is not None and core_answer.status == groups_answer.status == 304:
            return known.enablements
        # One document unchanged and the other not: the unchanged one's content is not kept.
        if core_answer.status == 304:
            core_answer = await self._discover("/api", "discover API versions", "")
        if groups_answer.status == 304:
            groups_answer = await self._discover("/apis", "discover API groups", "")
        core = _json_of(self.credentials, "discover API versions", core_answer)
        groups = _json_of(self.credentials, "discover API groups", groups_answer)
        aggregated = resource_lists(core, groups)
        if aggregated is not None:
            enablements = api_enablements(aggregated)
            if core_answer.etag and groups_answer.etag:
                self.http.discovery[server] = Discovered(core_answer.etag, groups_answer.etag, enablements)
            return enablements
        lists = []
        for gv in group_versions(core, groups):
            path = f"/api/{gv}" if "/" not in gv else f"/apis/{gv}"
            lists.append(await self._get(path, f"discover {gv}"))
        return api_enablements(lists)

    async def list_nodes(self) -> list[dict[str, Any]]:
        return list((await self._get("/api/v1/nodes", "list nodes")).get("items") or [])

    async def list_pods(self) -> list[dict[str, Any]]:
        return list((await self._get("/api/v1/pods", "list pods")).get("items") or [])

    async def _discover(self, path: str, operation: str, etag: str) -> Answer:
        return await self.http.get(self.credentials, path, operation, AGGREGATED_ACCEPT, etag)

    async def _get(self, path: str, operation: str) -> dict[str, Any]:
        return await self.http.get_json(self.credentials, path, operation)
