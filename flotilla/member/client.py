"""Talking to one member cluster over its REST API, whatever is behind the kubeconfig.

Requests go out on one aiohttp session per cluster (bearer-token auth, TLS from the CA, a
per-request timeout), with paths taken from discovery, so the same code reaches the simulator
and a real API server. kubernetes_asyncio's generated client does the same through
`ApiClient.call_api`, but importing it loads every generated model (tens of MiB in each process
that talks to members) and its session looks up a proxy and a netrc file, in threads, at every
request; only JSON in and out is needed here.

Every answer is read and decoded within `flotilla.member.limits` (`flotilla.member.decoding`):
whatever is at a member's address, one answer costs this process a bounded amount of memory.
"""

from __future__ import annotations

import asyncio
import asyncio.sslproto
import base64
import builtins
import functools
import ssl
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import aiohttp

import flotilla
from flotilla.api import jsonbytes
from flotilla.member.credentials import Credentials
from flotilla.member.decoding import (
    Budget,
    MemberWatchEvent,
    WatchDecoder,
    decode_list,
    decode_object,
    read_body,
    status_error,
)
from flotilla.member.discovery import (
    AGGREGATED_ACCEPT,
    ApiResource,
    api_enablements,
    group_versions,
    resource_lists,
    resources_of,
)
from flotilla.member.errors import MemberError, MemberLimitExceeded
from flotilla.member.limits import LIMITS, Limits

__all__ = [
    "REQUEST_TIMEOUT", "Health", "MemberClient", "MemberError", "MemberLimitExceeded", "MemberWatchEvent",
    "probe_health", "proxy_options", "ssl_context",
]

# How long the executor waits for a member's answer to one request: the API server's own
# default (its --request-timeout). Not the probe timeout: an apply or a delete to a busy member
# takes longer than a health probe, and one given up on is usually done all the same, only to
# be sent again: under a failover's load many applies outlast the demo profile's 1 s probe
# timeout.
REQUEST_TIMEOUT = 60.0

# Watch events carrying large objects can exceed aiohttp's default read buffer (etcd's request
# limit, and so an object's, is 1.5 MiB).
_READ_BUFFER = 2**21
# Connections to one member (kubernetes_asyncio's default pool size): its watches, each holding
# one, and its requests.
_CONNECTIONS = 100
# Requests to one member in flight at once, watches apart. Each opens a connection that is then
# kept alive, and an HTTPS connection holds asyncio's 256 KiB read buffer: with the executor's
# workers applying to every member at once, each member would keep as many connections as there
# are workers. A Kubernetes client multiplexes one HTTP/2 connection; a few HTTP/1.1 ones serve here.
_REQUESTS = 4
# asyncio gives every TLS connection a read buffer of SSLProtocol.max_size, 256 KiB, allocated
# whole when the connection opens. A control plane keeps a watch and a few requests' connections
# open to each of a hundred members: at 256 KiB each, tens of MiB of mostly empty buffers in
# the executor. Reads take 64 KiB at a time instead; a larger answer takes more of them. This
# holds on Python's own loop (`--event-loop asyncio`); uvloop's TLS keeps a 256 KiB buffer of its
# own per connection, resident only as far as an answer has filled it.
_TLS_READ_BUFFER = 64 * 1024
if getattr(asyncio.sslproto.SSLProtocol, "max_size", 0) > _TLS_READ_BUFFER:
    asyncio.sslproto.SSLProtocol.max_size = _TLS_READ_BUFFER


@dataclass(frozen=True)
class Health:
    online: bool
    healthy: bool


class MemberClient:
    """One member cluster's API. `timeout` bounds every request (connect to last byte); a call
    that needs several requests (discovery) bounds each; `limits` how much of each answer is read
    and decoded (flotilla.member.limits: past them, MemberLimitExceeded). Safe to build outside a
    running loop; call `close()` when done."""

    def __init__(self, credentials: Credentials, timeout: float = 10.0, limits: Limits = LIMITS) -> None:
        self.credentials = credentials
        self.timeout = timeout
        self.limits = limits
        self._session: aiohttp.ClientSession | None = None
        self._requests = asyncio.Semaphore(_REQUESTS)
        self._headers: dict[str, str] = {"User-Agent": f"flotilla/{flotilla.__version__}"}
        if credentials.token:
            self._headers["Authorization"] = f"Bearer {credentials.token}"
        # The Cluster's spec.proxyURL and spec.proxyHeader, on every request (`proxy_options`).
        self._proxy = proxy_options(credentials)
        # groupVersion -> kind -> resource; filled by discovery, refreshed when a kind is missing.
        self._resources: dict[str, dict[str, ApiResource]] = {}

    @property
    def server(self) -> str:
        return self.credentials.server

    async def health(self) -> Health:
        return await probe_health(self._status_of)

    async def version(self) -> str:
        info = await self._request("GET", "/version", "get version")
        return str(info.get("gitVersion", ""))

    async def api_enablements(self) -> list[tuple[str, list[tuple[str, str]]]]:
        """[(groupVersion, [(resource, kind)])] as Karmada reports them; MemberError if any
        group/version cannot be read (the caller decides what a partial answer means)."""
        # Discovery documents are read as lists: aggregated, they hold every group's resources.
        core, groups = await asyncio.gather(
            self._request("GET", "/api", "discover API versions", accept=AGGREGATED_ACCEPT, listing=True),
            self._request("GET", "/apis", "discover API groups", accept=AGGREGATED_ACCEPT, listing=True),
        )
        aggregated = resource_lists(core, groups)
        if aggregated is not None:
            for resource_list in aggregated:
                self._remember(resource_list)
            return api_enablements(aggregated)
        lists = await asyncio.gather(*(self._discover(gv) for gv in group_versions(core, groups)))
        return api_enablements(list(lists))

    async def list_nodes(self) -> list[dict[str, Any]]:
        return await self._list_path("/api/v1/nodes", "v1", "Node", "list nodes")

    async def list_pods(self) -> list[dict[str, Any]]:
        return await self._list_path("/api/v1/pods", "v1", "Pod", "list pods")

    async def apply(self, obj: dict[str, Any], field_manager: str = "flotilla",
                    resource_version: str | None = None) -> dict[str, Any]:
        """Server-side apply with force=true: `obj` becomes what `field_manager` owns.

        `resource_version`: apply only onto that version of an existing object; the API server
        answers 409 Conflict (MemberError status 409) when the object has changed since (a
        resourceVersion in a patch is a precondition). Not for creating: servers differ on an
        apply that creates with one set (some create, some answer 500)."""
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        metadata = obj.get("metadata") or {}
        name = metadata.get("name")
        if not api_version or not kind or not name:
            raise ValueError("apply needs apiVersion, kind and metadata.name")
        resource = await self._resource(api_version, kind)
        namespace = (metadata.get("namespace") or "default") if resource.namespaced else ""
        if resource_version:
            obj = {**obj, "metadata": {**metadata, "resourceVersion": resource_version}}
        return await self._request(
            "PATCH", _object_path(resource, namespace, name), f"apply {kind} {_key(namespace, name)}",
            query=[("fieldManager", field_manager), ("force", "true")],
            body=obj, content_type="application/apply-patch+yaml",
        )

    async def get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        resource = await self._resource(api_version, kind)
        namespace = namespace if resource.namespaced else ""
        try:
            return await self._request("GET", _object_path(resource, namespace, name),
                                       f"get {kind} {_key(namespace, name)}")
        except MemberError as e:
            if e.status == 404:
                return None
            raise

    async def list(self, api_version: str, kind: str, namespace: str | None = None,
                   label_selector: str | None = None) -> list[dict[str, Any]]:
        resource = await self._resource(api_version, kind)
        path = _collection_path(resource, namespace if resource.namespaced else None)
        where = f" in {namespace}" if namespace and resource.namespaced else ""
        return await self._list_path(path, api_version, kind, f"list {kind}{where}", label_selector)

    async def list_versioned(self, api_version: str, kind: str,
                             timeout: float | None = None) -> tuple[builtins.list[dict[str, Any]], str]:
        """Every object of a kind (all namespaces), and the list's resourceVersion to watch from.
        `timeout` (default: the client's) bounds it: a list of thousands takes longer than a probe."""
        resource = await self._resource(api_version, kind)
        raw = await self._answer("GET", _collection_path(resource, None), f"list {kind}", Budget.list(self.limits),
                                 timeout=timeout)
        return decode_list(raw, self.server, f"list {kind}", self.limits, api_version, kind)

    async def watch(self, api_version: str, kind: str, resource_version: str, timeout_seconds: int = 300,
                    connect_timeout: float | None = None) -> AsyncIterator[MemberWatchEvent]:
        """The changes to a kind (all namespaces) after `resource_version`, with bookmarks,
        until the server ends the stream (after `timeout_seconds`). An ERROR event is raised
        as MemberError: status 410 means the version is too old and the caller must relist."""
        resource = await self._resource(api_version, kind)
        operation = f"watch {kind}"
        query = [("watch", "1"), ("resourceVersion", resource_version), ("allowWatchBookmarks", "true"),
                 ("timeoutSeconds", str(timeout_seconds))]
        # The stream is quiet for as long as nothing changes: only connecting is bounded (by
        # `connect_timeout`, default the client's timeout), the whole stream by the server's
        # timeout plus that.
        connect = connect_timeout or self.timeout
        limit = aiohttp.ClientTimeout(total=timeout_seconds + connect, connect=connect, sock_connect=connect)
        try:
            response = await self._session_().request(
                "GET", self._url(_collection_path(resource, None)), params=query, timeout=limit,
                headers={**self._headers, "Accept": "application/json"}, **self._proxy)
        except (aiohttp.ClientError, OSError, TimeoutError) as e:
            raise self._transport_error(operation, e) from e
        try:
            if not 200 <= response.status <= 299:
                raise await self._error_of(response, operation)
            decoder = WatchDecoder(self.server, operation, self.limits, api_version, kind)
            async for chunk in response.content.iter_any():
                for event in decoder.feed(chunk):
                    yield event
            for event in decoder.end():
                yield event
        except (aiohttp.ClientError, OSError, TimeoutError) as e:
            raise self._transport_error(operation, e) from e
        finally:
            response.release()

    async def delete(self, api_version: str, kind: str, namespace: str, name: str,
                     preconditions: dict[str, str] | None = None) -> bool:
        """Delete with background propagation (dependents go after the owner); False if absent.

        `preconditions` ({"uid": ..., "resourceVersion": ...}, DeleteOptions.preconditions): delete
        only that object at that version; otherwise the server answers 409 Conflict (MemberError
        status 409) and deletes nothing."""
        resource = await self._resource(api_version, kind)
        namespace = namespace if resource.namespaced else ""
        options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
        if preconditions:
            options["preconditions"] = dict(preconditions)
        try:
            await self._request("DELETE", _object_path(resource, namespace, name),
                                f"delete {kind} {_key(namespace, name)}", body=options)
        except MemberError as e:
            if e.status == 404:
                return False
            raise
        return True

    async def close(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    async def __aenter__(self) -> MemberClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- discovery ---------------------------------------------------------------------------

    async def _resource(self, api_version: str, kind: str) -> ApiResource:
        found = self._resources.get(api_version, {}).get(kind)
        if found is None:
            # A miss may mean a CRD installed since we last looked: ask again before failing.
            try:
                await self._discover(api_version)
            except MemberError as e:
                if e.status != 404:
                    raise
            found = self._resources.get(api_version, {}).get(kind)
        if found is None:
            raise MemberError(self.server, f"find {kind} in {api_version}",
                              "the server does not serve this kind (is its CRD installed?)", status=404,
                              reason="NotFound")
        return found

    async def _discover(self, group_version: str) -> dict[str, Any]:
        path = f"/api/{group_version}" if "/" not in group_version else f"/apis/{group_version}"
        resource_list = await self._request("GET", path, f"discover {group_version}", listing=True)
        self._remember(resource_list)
        return resource_list

    def _remember(self, resource_list: dict[str, Any]) -> None:
        self._resources[str(resource_list.get("groupVersion", ""))] = {r.kind: r for r in resources_of(resource_list)}

    # -- transport ---------------------------------------------------------------------------

    async def _list_path(self, path: str, api_version: str, kind: str, operation: str,
                         label_selector: str | None = None) -> builtins.list[dict[str, Any]]:
        query = [("labelSelector", label_selector)] if label_selector else None
        raw = await self._answer("GET", path, operation, Budget.list(self.limits), query=query)
        return decode_list(raw, self.server, operation, self.limits, api_version, kind)[0]

    async def _request(self, method: str, path: str, operation: str, *,
                       query: builtins.list[tuple[str, str]] | None = None, body: Any = None,
                       content_type: str | None = None, timeout: float | None = None,
                       accept: str = "application/json", listing: bool = False) -> dict[str, Any]:
        """The JSON object a request answers, within the limits of one object (or of a list, for
        `listing`); MemberError for any other answer, or none."""
        budget = Budget.list(self.limits) if listing else Budget.object(self.limits)
        raw = await self._answer(method, path, operation, budget, query=query, body=body, content_type=content_type,
                                 timeout=timeout, accept=accept)
        return decode_object(raw, self.server, operation, budget)

    async def _answer(self, method: str, path: str, operation: str, budget: Budget, *,
                      query: builtins.list[tuple[str, str]] | None = None, body: Any = None,
                      content_type: str | None = None, timeout: float | None = None,
                      accept: str = "application/json") -> bytearray:
        """The body of a 2xx answer, at most `budget.bytes` of it; MemberError otherwise."""
        headers = {**self._headers, "Accept": accept}
        data = None
        if body is not None:
            headers["Content-Type"] = content_type or "application/json"
            data = jsonbytes.dumps(body)
        try:
            async with self._requests, self._session_().request(
                method, self._url(path), params=query, data=data, headers=headers,
                timeout=aiohttp.ClientTimeout(total=timeout or self.timeout), **self._proxy,
            ) as response:
                if not 200 <= response.status <= 299:
                    raise await self._error_of(response, operation)
                return await read_body(response, self.server, operation, budget.bytes, budget.bytes_field)
        except (aiohttp.ClientError, OSError, TimeoutError) as e:
            raise self._transport_error(operation, e, timeout) from e

    async def _error_of(self, response: aiohttp.ClientResponse, operation: str) -> MemberError:
        """The error an answer with a non-2xx status stands for. Its status is the answer (404:
        absent, 409: changed, 410: relist), so a body too long to read as a Status costs only the
        message, which then says so."""
        limit = self.limits.object_bytes
        try:
            body = await read_body(response, self.server, operation, limit, "object_bytes")
        except MemberLimitExceeded:
            return MemberError(self.server, operation, f"HTTP {response.status}: {response.reason or ''} (a body "
                               f"larger than {limit} bytes, Limits.object_bytes, not read)", status=response.status)
        return status_error(self.server, operation, response.status, response.reason or "", body)

    async def _status_of(self, path: str) -> int:
        """The HTTP status of GET `path`, whatever it is; MemberError when there is no answer, or
        one whose body is longer than any health endpoint's (`Limits.health_bytes`)."""
        try:
            async with self._session_().get(
                self._url(path), headers={**self._headers, "Accept": "*/*"},
                timeout=aiohttp.ClientTimeout(total=self.timeout), **self._proxy,
            ) as response:
                await read_body(response, self.server, f"GET {path}", self.limits.health_bytes, "health_bytes")
                return response.status
        except (aiohttp.ClientError, OSError, TimeoutError) as e:
            raise self._transport_error(f"GET {path}", e) from e

    def _transport_error(self, operation: str, e: BaseException, timeout: float | None = None) -> MemberError:
        if isinstance(e, TimeoutError):
            return MemberError(self.server, operation, f"timed out after {timeout or self.timeout:g}s")
        return MemberError(self.server, operation, f"unreachable: {e or type(e).__name__}")

    def _url(self, path: str) -> str:
        return self.credentials.server.rstrip("/") + path

    def _session_(self) -> aiohttp.ClientSession:
        # Built on first use: aiohttp sessions must be created inside the running loop.
        if self._session is None:
            try:
                context = ssl_context(self.credentials.ca_data, self.credentials.insecure_skip_tls_verify)
            except (ValueError, ssl.SSLError) as e:  # bad base64 or PEM in the CA data
                raise MemberError(self.server, "build client", f"invalid certificate authority: {e}") from e
            # trust_env stays off unless a proxy is configured in the environment: it costs a proxy
            # and a netrc lookup, each in a thread, at every request, and a netrc login would clash
            # with the token. A Cluster's own proxy (spec.proxyURL) is passed with each request and
            # takes precedence.
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=_CONNECTIONS, ssl=context),
                trust_env=not self._proxy and _proxy_configured(), read_bufsize=_READ_BUFFER)
        return self._session


async def probe_health(status_of: Callable[[str], Awaitable[int]]) -> Health:
    """Karmada's probe (docs/karmada-rules.md §3 step 3): GET /readyz, and /healthz only if /readyz is 404.

    `status_of(path)` answers the HTTP status of a GET, whatever it is, and raises MemberError
    only when there is no answer (an answer whose body goes past `Limits.health_bytes` counts as
    none: no API server's health endpoint says that much, and it is not read to its end). No
    answer (refused, dropped, timed out) or a refusal of our credentials (401/403) is offline;
    200 is healthy. Any other answer means the API server is there but not healthy: online,
    unhealthy. Karmada counts every non-2xx answer as offline; Flotilla's member-cluster issue
    asks for an API server answering 500 to read as ClusterNotReady, and an answer does prove
    reachability.
    """
    try:
        status = await status_of("/readyz")
        if status == 404:
            status = await status_of("/healthz")
    except MemberError:
        return Health(online=False, healthy=False)
    if status in (401, 403):
        return Health(online=False, healthy=False)
    return Health(online=True, healthy=status == 200)


@functools.lru_cache(maxsize=64)
def ssl_context(ca_data: str, insecure: bool) -> ssl.SSLContext:
    """The TLS settings for a member's CA (base64 PEM, as a kubeconfig holds it; "" for the
    system's trust store), built once per CA and shared by every member it signed. ValueError or
    ssl.SSLError for CA data that is not base64 PEM."""
    cadata = base64.b64decode(ca_data).decode() if ca_data else None
    context = ssl.create_default_context(cadata=cadata)
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def proxy_options(credentials: Credentials) -> dict[str, Any]:
    """The keyword arguments of an aiohttp request that send it through the member's proxy
    (Cluster spec.proxyURL, with spec.proxyHeader sent to the proxy: in the CONNECT that opens a
    tunnel to an https:// member, on the request itself to an http:// one); none without one.
    An https:// proxy's certificate is checked as the member's is (the member's CA, or the system's
    trust store without one), as client-go checks it."""
    if not credentials.proxy_url:
        return {}
    options: dict[str, Any] = {"proxy": credentials.proxy_url}
    headers = credentials.proxy_headers()
    if headers:
        options["proxy_headers"] = headers
    return options


def _proxy_configured() -> bool:
    return any(scheme in ("http", "https") for scheme in urllib.request.getproxies())


def _collection_path(resource: ApiResource, namespace: str | None) -> str:
    if namespace:
        return f"{resource.base_path}/namespaces/{quote(namespace, safe='')}/{resource.name}"
    return f"{resource.base_path}/{resource.name}"


def _object_path(resource: ApiResource, namespace: str, name: str) -> str:
    return f"{_collection_path(resource, namespace or None)}/{quote(name, safe='')}"


def _key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name
