"""`?watch=1` on a list path: the API server's watch, as newline-delimited JSON events.

`resourceVersion` unset or "0" starts with a synthetic ADDED per current object, then
changes; any other version streams the changes after it, or ends at once with an ERROR event
carrying a 410 Expired Status when that version is no longer in the cluster's history (what
the API server's watch cache does). `allowWatchBookmarks=true` adds a BOOKMARK every
`BOOKMARK_INTERVAL` carrying the version the watcher is up to, so a watch of a quiet kind can
resume after the history moved on. `timeoutSeconds` ends the stream cleanly.

Faults reach open streams too: a `down` cluster drops them, an `unreachable` one holds every
event back until it recovers (the stream just goes quiet), and the server stopping ends them.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import web

from flotilla.api import jsonbytes
from sim import errors, tables
from sim.catalog import ResourceType
from sim.cluster import SimCluster
from sim.faults import Fault
from sim.history import Change
from sim.selectors import labels_of, parse_field_selector, parse_label_selector
from sim.waiting import wait_first

# Set on each request by the server: watches end when it does.
STOPPING = web.RequestKey("sim-watch-stopping", asyncio.Event)
BOOKMARK_INTERVAL = 5.0
DEFAULT_TIMEOUT = 1800.0  # the API server's --min-request-timeout


def requested(request: web.Request) -> bool:
    return request.method == "GET" and request.query.get("watch") in ("1", "true")


def _expired(resource_version: int, floor: int) -> bytes:
    status = errors.ApiError(410, "Expired", f"too old resource version: {resource_version} ({floor})").status()
    return _line("ERROR", json.dumps(status).encode())


def _line(type_: str, data: bytes) -> bytes:
    return b'{"type":"' + type_.encode() + b'","object":' + data + b"}\n"


def _params(request: web.Request) -> tuple[int | None, float, bool]:
    query = request.query
    version = query.get("resourceVersion", "")
    try:
        start = None if version in ("", "0") else int(version)
    except ValueError:
        raise errors.bad_request(f"resourceVersion: invalid value {version!r}: must be an integer") from None
    timeout_text = query.get("timeoutSeconds", "")
    try:
        timeout = float(int(timeout_text)) if timeout_text else DEFAULT_TIMEOUT
    except ValueError:
        raise errors.bad_request(f"timeoutSeconds: invalid value {timeout_text!r}: must be an integer") from None
    return start, timeout, query.get("allowWatchBookmarks") in ("1", "true")


class _Filter:
    """Which objects and changes a watch sends (its kind, namespace and selectors), and how: as
    they are, or as one-row Tables when the client asks for Tables (`kubectl get -w`)."""

    def __init__(self, request: web.Request, cluster: SimCluster, t: ResourceType, namespace: str | None,
                 crd: dict[str, Any] | None) -> None:
        self.t, self.namespace, self.crd, self.clock = t, namespace, crd, cluster.state.clock
        self.labels = parse_label_selector(request.query.get("labelSelector"))
        self.field_selector = request.query.get("fieldSelector")
        self.fields = parse_field_selector(self.field_selector)
        self.accept = request.headers.get("Accept", "")
        self.tables = tables.table_version(self.accept) is not None
        self.include_object = request.query.get("includeObject")

    def data(self, data: bytes) -> bytes:
        if not self.tables:
            return data
        return json.dumps(tables.printed(self.accept, self.include_object, self.t, json.loads(data), self.clock.now(),
                                         self.crd)).encode()

    def object(self, obj: dict[str, Any]) -> bool:
        return self.labels(labels_of(obj)) and self.fields(obj)

    def change(self, change: Change) -> bool:
        if change.kind != self.t.kind or change.group != self.t.group:
            return False
        if self.namespace is not None and change.namespace != self.namespace:
            return False
        return self.labels(change.labels) and (self.field_selector is None or self.fields(jsonbytes.loads(change.data)))


async def serve(request: web.Request, cluster: SimCluster, t: ResourceType, namespace: str | None,
                crd: dict[str, Any] | None = None) -> web.StreamResponse:
    start, timeout, bookmarks = _params(request)
    wanted = _Filter(request, cluster, t, namespace, crd)
    response = web.StreamResponse(headers={"Content-Type": "application/json"})
    try:
        await response.prepare(request)
        if await _stream(request, response, cluster, wanted, start, timeout, bookmarks):
            await response.write_eof()
    except ConnectionError:
        pass  # the client went away
    return response


async def _stream(request: web.Request, response: web.StreamResponse, cluster: SimCluster, wanted: _Filter,
                  start: int | None, timeout: float, bookmarks: bool) -> bool:
    """Send events until the stream ends: True when it ends cleanly, False when it is dropped."""
    state, history = cluster.state, cluster.state.store.history
    clock = state.clock
    stopping = request.get(STOPPING) or asyncio.Event()
    if start is None:
        start = history.head
        initial = [_line("ADDED", wanted.data(jsonbytes.dumps(obj)))
                   for obj in state.store.items(wanted.t, wanted.namespace) if wanted.object(obj)]
        if initial:
            await response.write(b"".join(initial))
    cursor = start
    deadline = clock.monotonic() + timeout
    next_bookmark = clock.monotonic() + BOOKMARK_INTERVAL
    while True:
        seen = history.wakes
        if stopping.is_set() or cluster.fault is Fault.DOWN:
            if request.transport is not None:
                request.transport.close()
            return False
        if cluster.fault is not Fault.UNREACHABLE:
            changes = history.since(cursor)
            if changes is None:
                await response.write(_expired(cursor, history.floor))
                return True
            out = [_line(c.type, wanted.data(c.data)) for c in changes if wanted.change(c)]
            cursor = history.head
            if bookmarks and clock.monotonic() >= next_bookmark:
                out.append(_line("BOOKMARK", json.dumps(_bookmark(wanted.t, cursor)).encode()))
                next_bookmark = clock.monotonic() + BOOKMARK_INTERVAL
            if out:
                await response.write(b"".join(out))
        now = clock.monotonic()
        if now >= deadline:
            return True
        wait = min(deadline, next_bookmark) - now if bookmarks else deadline - now
        await wait_first(history.changed(seen), stopping.wait(), clock.sleep(wait))


def _bookmark(t: ResourceType, resource_version: int) -> dict[str, Any]:
    return {"kind": t.kind, "apiVersion": t.api_version, "metadata": {"resourceVersion": str(resource_version)}}
