"""What the status service reads from a Push member, over at most one kept-alive HTTPS
connection per member: `/readyz`, and now and then its version, discovery, nodes and pods.

Not `MemberClient`, which keeps a session and a pool per member for the executor's parallel
applies: discovery's reads in parallel would leave several TLS connections open per member, each
holding asyncio's 256 KiB read buffer, and at a hundred members those buffers would be most of
the status service's memory (docs/performance.md, "What the defaults rest on"). Here one aiohttp
session per event loop serves every member, its connector holds one connection per member (the
pool is keyed by host, port and TLS context), and a member's reads go one after another. The
probe's reading, the TLS settings, the errors (`MemberError`) and the limits on what an answer
may be (`flotilla.member.limits`: what a member sends is read and decoded within them, so one
that sends without end costs this process no more than they allow) are `MemberClient`'s own.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Any

import aiohttp

import flotilla
from flotilla.member import LIMITS, Credentials, Health, Limits, MemberError
from flotilla.member.client import probe_health, proxy_options, ssl_context
from flotilla.member.decoding import Budget, decode_list, decode_object, read_body
from flotilla.member.discovery import AGGREGATED_ACCEPT, api_enablements, group_versions, resource_lists

_USER_AGENT = f"flotilla/{flotilla.__version__}"


class MemberSession:
    """One aiohttp session for every member, made on first use inside the loop that uses it (an
    aiohttp session belongs to one loop). `timeout` bounds each request, connect to last byte;
    an idle connection is kept `keepalive` seconds, longer than the period of the reads that
    reuse it; `limits` how much of an answer is read (a health endpoint's, `health_bytes`;
    discovery's and lists', the list limits; any other's, one object's)."""

    def __init__(self, timeout: float, keepalive: float, limits: Limits = LIMITS) -> None:
        self.timeout = aiohttp.ClientTimeout(total=timeout)
        self.keepalive = keepalive
        self.limits = limits
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
                  accept: str = "application/json", etag: str = "", limit: int | None = None,
                  limit_field: str = "object_bytes") -> Answer:
        """GET `path` (If-None-Match `etag`, when given): the answer, whatever its status;
        MemberError when there is none, MemberLimitExceeded when its body is longer than `limit`
        bytes (default: one object's, `Limits.object_bytes`)."""
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
            async with self._open().get(f"{server}{path}", headers=headers, ssl=tls,
                                        **proxy_options(credentials)) as response:
                body = await read_body(response, server, operation,
                                       self.limits.object_bytes if limit is None else limit, limit_field)
                return Answer(response.status, body, response.headers.get("ETag", ""))
        except TimeoutError as e:
            raise MemberError(server, operation, f"timed out after {self.timeout.total:g}s") from e
        except (aiohttp.ClientError, OSError) as e:
            raise MemberError(server, operation, f"unreachable: {e or type(e).__name__}") from e

    async def health(self, credentials: Credentials) -> Health:
        """Karmada's probe, read as `MemberClient.health` reads it."""
        async def status_of(path: str) -> int:
            answer = await self.get(credentials, path, f"GET {path}", accept="*/*", limit=self.limits.health_bytes,
                                    limit_field="health_bytes")
            return answer.status

        return await probe_health(status_of)

    async def get_json(self, credentials: Credentials, path: str, operation: str,
                       listing: bool = False) -> dict[str, Any]:
        """The JSON object GET `path` answers with 200, within one object's limits (a list's,
        for `listing`); MemberError for any other answer."""
        budget = Budget.list(self.limits) if listing else Budget.object(self.limits)
        answer = await self.get(credentials, path, operation, limit=budget.bytes, limit_field=budget.bytes_field)
        return _json_of(credentials, operation, answer, budget)

    async def get_list(self, credentials: Credentials, path: str, operation: str) -> list[dict[str, Any]]:
        """The items of the list GET `path` answers with 200, within the list limits; MemberError
        for any other answer (never an empty list for an answer that is no list)."""
        budget = Budget.list(self.limits)
        answer = await self.get(credentials, path, operation, limit=budget.bytes, limit_field=budget.bytes_field)
        _check_ok(credentials, operation, answer)
        return decode_list(answer.body, credentials.server, operation, self.limits)[0]

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes | bytearray
    etag: str = ""


@dataclass(frozen=True)
class Discovered:
    """A member's API enablements, and the ETags of the two documents they were read from."""

    core_etag: str
    groups_etag: str
    enablements: list[tuple[str, list[tuple[str, str]]]]


def _check_ok(credentials: Credentials, operation: str, answer: Answer) -> None:
    if answer.status != 200:
        raise MemberError(credentials.server, operation,
                          f"HTTP {answer.status}: {bytes(answer.body[:200]).decode(errors='replace')}",
                          status=answer.status)


def _json_of(credentials: Credentials, operation: str, answer: Answer, budget: Budget) -> dict[str, Any]:
    _check_ok(credentials, operation, answer)
    return decode_object(answer.body, credentials.server, operation, budget)


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
        discovery = Budget.list(self.http.limits)
        core = _json_of(self.credentials, "discover API versions", core_answer, discovery)
        groups = _json_of(self.credentials, "discover API groups", groups_answer, discovery)
        aggregated = resource_lists(core, groups)
        if aggregated is not None:
            enablements = api_enablements(aggregated)
            if core_answer.etag and groups_answer.etag:
                self.http.discovery[server] = Discovered(core_answer.etag, groups_answer.etag, enablements)
            return enablements
        lists = []
        for gv in group_versions(core, groups):
            path = f"/api/{gv}" if "/" not in gv else f"/apis/{gv}"
            lists.append(await self.http.get_json(self.credentials, path, f"discover {gv}", listing=True))
        return api_enablements(lists)

    async def list_nodes(self) -> list[dict[str, Any]]:
        return await self.http.get_list(self.credentials, "/api/v1/nodes", "list nodes")

    async def list_pods(self) -> list[dict[str, Any]]:
        return await self.http.get_list(self.credentials, "/api/v1/pods", "list pods")

    async def _discover(self, path: str, operation: str, etag: str) -> Answer:
        limits = self.http.limits
        return await self.http.get(self.credentials, path, operation, AGGREGATED_ACCEPT, etag, limits.list_bytes,
                                   "list_bytes")

    async def _get(self, path: str, operation: str) -> dict[str, Any]:
        return await self.http.get_json(self.credentials, path, operation)
