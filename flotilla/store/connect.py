"""Connecting to etcd from a `--etcd-endpoints` style URL list.

Which etcd to use is decided above the store (flotilla.security.context: flag, environment, current
context); there is no default address here, so nothing silently reaches a plane on port 2379.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ipaddress
import itertools
import logging
from typing import Any
from urllib.parse import urlparse

import aetcd
import aetcd.exceptions
import aetcd.rpc
import aetcd.rtypes
import aetcd.utils
import aetcd.watcher

from flotilla.security.context import etcd_client_tls
from flotilla.security.tls import TLSFiles, is_tls_endpoint

log = logging.getLogger(__name__)

# Watch IDs this process names itself: far above the ones etcd assigns when none is given.
_watch_ids = itertools.count(1 << 32)


def parse_endpoints(endpoints: str) -> list[tuple[str, int]]:
    """Every endpoint of a comma-separated list as (host, port)."""
    parsed = []
    for given in endpoints.split(","):
        text = given.strip() if "://" in given else "http://" + given.strip()
        url = urlparse(text)
        if not url.hostname:
            raise ValueError(f"etcd endpoint {given.strip()!r}: no host")
        parsed.append((url.hostname, url.port or 2379))
    return parsed


def channel_target(endpoints: str) -> str:
    """One gRPC target over every endpoint, so the client carries on through the other members
    when the one it talks to is lost: gRPC's pick_first tries the addresses in order, and moves on
    when its connection breaks. gRPC lists several addresses only as IP literals of one family."""
    addresses = parse_endpoints(endpoints)
    if len(addresses) == 1:
        host, port = addresses[0]
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    ips = [(_ip(host), port) for host, port in addresses]
    if all(isinstance(ip, ipaddress.IPv4Address) for ip, _ in ips):
        return "ipv4:" + ",".join(f"{ip}:{port}" for ip, port in ips)
    if all(isinstance(ip, ipaddress.IPv6Address) for ip, _ in ips):
        return "ipv6:" + ",".join(f"[{ip}]:{port}" for ip, port in ips)
    raise ValueError(f"etcd endpoints {endpoints!r}: several endpoints must all be IPv4 or all IPv6 addresses "
                     "(or give one DNS name that resolves to every member)")


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address("127.0.0.1" if host == "localhost" else host)
    except ValueError:
        return None


# Events one watch holds for a reader that has fallen behind it (a storm of writes, a busy loop):
# past that the watch is dropped at the next revision and its reader resumes from there
# (WatchBehind), so what it has not read yet waits in etcd, not in this process's memory: a few
# MiB of Works or bindings at most. A reader that far behind is not slowed by reading them again.
WATCH_BACKLOG = 1024


class CrossedWatch(aetcd.exceptions.ClientError):  # type: ignore[misc]
    """etcd's answer to a watch request was handed to another request (see `watch`)."""


class WatchBehind(aetcd.exceptions.ClientError):  # type: ignore[misc]
    """The reader fell a backlog behind its watch, which is cancelled: every event before
    `resume` was delivered, none from it on; a new watch from `resume` carries on."""

    def __init__(self, resume: int, backlog: int) -> None:
        super().__init__(f"the reader fell {backlog} events behind; resume from revision {resume}")
        self.resume = resume


class BoundedWatch:
    """One watch's events, as aetcd's Watch gives them (each an `aetcd.rtypes.Event`), with a
    bounded backlog. aetcd queues every event of a watch without bound, and all of a client's
    watches share one stream read by one task, so a reader cannot slow the stream down without
    stalling every other watch: instead, once `backlog` events wait, the watch stops taking any
    and is cancelled at etcd, and the reader, after the events it holds, gets WatchBehind with the
    revision to resume from. The cut falls between revisions, never inside one (a transaction's
    events stay together), so a watch from `resume` neither repeats nor skips an event."""

    def __init__(self, client: aetcd.Client, backlog: int) -> None:
        self._client = client
        self._backlog = backlog
        self._events: collections.deque[Any] = collections.deque()
        self._ready = asyncio.Event()
        self._last_revision = 0
        self._resume: int | None = None
        self._closed = False
        self._cancelling: asyncio.Task[None] | None = None
        self.watch_id: int | None = None

    @property
    def cut_at(self) -> int | None:
        """The revision the watch was cut at once its reader fell behind; None until then."""
        return self._resume

    async def deliver(self, event_or_error: Any) -> None:
        """The watcher's callback, on the stream's task: never waits."""
        if self._closed or self._resume is not None:
            return
        if isinstance(event_or_error, aetcd.rtypes.Event):
            revision = int(event_or_error.kv.mod_revision)
            if len(self._events) >= self._backlog and revision != self._last_revision:
                self._resume = revision
                # Stop etcd sending what would be dropped; the reader resumes on a new watch.
                self._cancelling = asyncio.ensure_future(self._cancel_at_etcd())
            else:
                self._events.append(event_or_error)
                self._last_revision = revision
        else:
            self._events.append(event_or_error)
        self._ready.set()

    def __aiter__(self) -> BoundedWatch:
        return self

    async def __anext__(self) -> Any:
        while True:
            if self._events:
                item = self._events.popleft()
                if isinstance(item, aetcd.rtypes.Event):
                    return item
                self._closed = True
                if item is None:
                    raise StopAsyncIteration
                aetcd.exceptions._handle_exception(item)
            if self._resume is not None:
                self._closed = True
                raise WatchBehind(self._resume, self._backlog)
            if self._closed:
                raise StopAsyncIteration
            self._ready.clear()
            await self._ready.wait()

    async def cancel(self) -> None:
        """No more events; etcd is told to stop sending them (once: a watch cut for a reader
        behind it was told already)."""
        self._closed = True
        self._events.clear()
        self._ready.set()
        await (self._cancelling or self._cancel_at_etcd())

    async def _cancel_at_etcd(self) -> None:
        if self.watch_id is None:
            return
        try:
            await self._client._watcher.cancel(self.watch_id)
        except Exception:  # the stream may already be gone with the connection
            log.debug("watch cancel failed", exc_info=True)


async def watch(client: aetcd.Client, key: bytes, prefix: bool = False, backlog: int = WATCH_BACKLOG,
                **options: Any) -> BoundedWatch:
    """A watch (of a key, or of every key under a prefix) with a bounded backlog (BoundedWatch)
    that stays correct across an etcd restart.

    aetcd hands etcd's "created" answer to whichever watch request is pending. A create request
    left queued by an attempt that timed out while etcd was down is sent once etcd is back, and
    its answer would go to the next request: that watch would deliver another key's events, or
    none. So each watch names its own ID; the watcher (`_Watcher`) cancels answers meant for
    others, and should one still get through, it is refused here (the stray watch cancelled)
    for the caller to retry as after any watch failure.
    """
    wanted = next(_watch_ids)
    if prefix:
        options["range_end"] = aetcd.utils.prefix_range_end(key)
    got = BoundedWatch(client, backlog)
    try:
        await client.connect()
        callback = await client._watcher.add_callback(key, got.deliver, watch_id=wanted, **options)
    except aetcd.rpc.AioRpcError as e:
        aetcd.exceptions._handle_exception(e)
    got.watch_id = callback.watch_id
    if got.watch_id != wanted:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(got.cancel(), 2)
        raise CrossedWatch(f"etcd's answer for watch {got.watch_id} came for watch {wanted} of {key!r}")
    return got


class _Watcher(aetcd.watcher.Watcher):  # type: ignore[misc]
    """aetcd's Watcher, sending the watch ID a caller names (aetcd drops it from the request),
    and giving etcd's "created" answer only to the request that asked for that ID: an answer
    to a request that gave up is cancelled instead of handed to the one pending now."""

    def _build_watch_create_request(self, *args: Any, watch_id: int | None = None, **kwargs: Any) -> Any:
        request = super()._build_watch_create_request(*args, watch_id=watch_id, **kwargs)
        if watch_id:
            request.create_request.watch_id = watch_id
            # Built while its callback is the pending one (aetcd sets it, then enqueues this).
            if self._new_callback is not None:
                self._new_callback.wanted_id = watch_id
        return request

    async def _handle_response(self, response: Any) -> None:
        if response.created:
            async with self._lock:
                pending = self._new_callback
                wanted = getattr(pending, "wanted_id", None) if pending is not None else None
                stray = wanted is not None and response.watch_id != wanted
                if stray:
                    await self._enqueue_watch_cancel(watch_id=response.watch_id)
            if stray:
                return
        await super()._handle_response(response)


class _Client(aetcd.Client):  # type: ignore[misc]
    def __init__(self, *args: Any, tls: TLSFiles | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._tls = tls

    async def connect(self) -> None:
        if self._tls is not None and not self._connected.is_set():
            # aetcd only opens plain channels: the same stubs on a TLS channel.
            self.channel = aetcd.rpc.secure_channel(f"{self._host}:{self._port}", self._tls.channel_credentials(),
                                                    options=self._options.items())
            self.kvstub, self.leasestub = aetcd.rpc.KVStub(self.channel), aetcd.rpc.LeaseStub(self.channel)
            self.clusterstub = aetcd.rpc.ClusterStub(self.channel)
            self.maintenancestub = aetcd.rpc.MaintenanceStub(self.channel)
            self._watcher = aetcd.watcher.Watcher(aetcd.rpc.WatchStub(self.channel), timeout=self._timeout,
                                                  metadata=self.metadata)
            self._connected.set()
        await super().connect()
        current: Any = getattr(self, "_watcher", None)
        if current is not None and not isinstance(current, _Watcher):
            # Swapped before its first watch: the stream is only opened by a watch.
            self._watcher = _Watcher(current._watchstub, timeout=current._timeout, metadata=current._metadata)


def make_client(endpoints: str, timeout: float | None = 10.0, tls: TLSFiles | None = None) -> aetcd.Client:
    """A client of every endpoint (one gRPC target); over TLS for https:// ones, with `tls` or
    else the certificates flotilla.security.context.etcd_client_tls finds; plain for http://, whatever `tls` says."""
    # aetcd dials f"{host}:{port}": splitting the target at its last colon gives it back whole.
    target = channel_target(endpoints)
    host, port = target.rsplit(":", 1)
    options: dict[str, Any] = {
        # Reconnect promptly after an etcd restart instead of backing off for a minute.
        "grpc.initial_reconnect_backoff_ms": 100,
        "grpc.max_reconnect_backoff_ms": 1000,
        "grpc.max_receive_message_length": 64 * 1024 * 1024,
    }
    secure = is_tls_endpoint(endpoints)
    if secure and "," in target:
        # The authority of an `ipv4:a,b,c` target is the whole list, which no certificate names:
        # every member is verified against the first endpoint's host instead.
        options["grpc.ssl_target_name_override"] = parse_endpoints(endpoints)[0][0]
    return _Client(host=host, port=int(port), timeout=timeout,
                   tls=(tls or etcd_client_tls(endpoints)) if secure else None, options=options)
