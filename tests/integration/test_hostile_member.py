"""A member that misbehaves costs the executor and the status service bounded memory and time.

Against a real HTTP server on a free port that answers as no API server would: a list body of
200 MB (streamed, declared, or gzip-compressed from a few hundred KiB), a watch line that never
ends, a list dense enough to decode to a GiB, more objects than a list may hold, a watch that adds
objects without end, lists that are no lists, and errors whose message is 4 MiB. Each read stops
at its cap with a MemberError naming the member, the request and the limit; this process's memory
(its RSS, sampled while the read runs) grows by far less than the answer; what reaches a Work's
condition is at most 1 KiB, in a real etcd."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import threading
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import psutil
import pytest
from aiohttp import web

from flotilla.aio.clock import RealClock
from flotilla.api import codec, jsonbytes
from flotilla.api.conditions import TRUE, get_condition, set_condition
from flotilla.api.keys import execution_namespace
from flotilla.api.limits import MAX_MESSAGE_BYTES
from flotilla.api.v1 import cluster_pb2, work_pb2
from flotilla.api.wellknown import EXECUTION_FINALIZER
from flotilla.clusterstatus.member_http import MemberReader, MemberSession
from flotilla.member import LIMITS, Credentials, Health, Limits, MemberClient, MemberError, MemberLimitExceeded
from flotilla.member.watches import MemberWatches
from flotilla.store import Store
from flotilla.store.events import EventRecorder, events_for
from services.executor.execution import APPLIED, ExecutionReconciler
from tests.http_serving import serving
from tests.unit.cache_fake import Cache

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

MB = 1_000_000
HOSTILE_BYTES = 200 * MB
# Growth of this process's memory a capped read may cost: the caps are 64 MiB for a list and
# 16 MiB for a watch line, and aiohttp buffers a few MiB besides.
GROWTH = 150 * MB
# A read that stops at its cap takes well under a second here; without caps, the 200 MB are read
# whole (a watch line's, quadratically) and decoded.
PROMPTLY = 20.0
HUGE_MESSAGE = "admission webhook denied the request: " + "x" * (4 * 1024 * 1024)
_MiB_CHUNK = b" " * (1024 * 1024)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def status(code: int, reason: str, message: str) -> web.Response:
    return web.json_response({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
                              "reason": reason, "code": code}, status=code)


def answering(body: Any) -> Handler:
    async def handler(_: web.Request) -> web.Response:
        return web.json_response(body)

    return handler


class HostileMember:
    """A member API server serving discovery for Pods, Nodes and ConfigMaps; how it answers a
    list of Pods, a watch of them, /readyz and a ConfigMap's apply is each test's to set."""

    def __init__(self) -> None:
        self.sent = 0  # bytes the last streamed answer got out before the reader hung up
        self.lists = 0
        self.pods: Handler = self.small_list
        self.watch: Handler = self.quiet_watch
        self.readyz: Handler = self.ok
        self.apply: Handler = self.accept

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/version", answering({"gitVersion": "v1.31.0"}))
        app.router.add_get("/api", answering({"kind": "APIVersions", "versions": ["v1"]}))
        app.router.add_get("/apis", answering({"kind": "APIGroupList", "groups": []}))
        app.router.add_get("/api/v1", answering({"kind": "APIResourceList", "groupVersion": "v1", "resources": [
            {"name": "pods", "kind": "Pod", "namespaced": True},
            {"name": "nodes", "kind": "Node", "namespaced": False},
            {"name": "configmaps", "kind": "ConfigMap", "namespaced": True}]}))
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/api/v1/pods", self._pods)
        app.router.add_get("/api/v1/nodes", answering({"kind": "NodeList", "items": []}))
        app.router.add_get("/api/v1/namespaces/{namespace}/configmaps/{name}", self._absent)
        app.router.add_patch("/api/v1/namespaces/{namespace}/configmaps/{name}", self._apply)
        return app

    async def _absent(self, _: web.Request) -> web.Response:
        return status(404, "NotFound", "configmaps not found")

    async def _readyz(self, request: web.Request) -> web.StreamResponse:
        return await self.readyz(request)

    async def _apply(self, request: web.Request) -> web.StreamResponse:
        return await self.apply(request)

    async def _pods(self, request: web.Request) -> web.StreamResponse:
        if request.query.get("watch"):
            return await self.watch(request)
        self.lists += 1
        return await self.pods(request)

    async def small_list(self, _: web.Request) -> web.Response:
        return web.json_response({"kind": "PodList", "metadata": {"resourceVersion": "1"},
                                  "items": [{"metadata": {"name": f"p{i}", "namespace": "default",
                                                          "resourceVersion": "1"}} for i in range(10)]})

    async def quiet_watch(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        await asyncio.sleep(3600)
        return response

    async def ok(self, _: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def accept(self, request: web.Request) -> web.Response:
        return web.json_response(await request.json())

    async def stream(self, request: web.Request, head: bytes, chunk: bytes = _MiB_CHUNK,
                     total: int = HOSTILE_BYTES, headers: dict[str, str] | None = None,
                     declared: int | None = None, chunks: Iterator[bytes] | None = None) -> web.StreamResponse:
        """`head`, then `chunk` again and again until `total` bytes are out or the reader hangs up."""
        response = web.StreamResponse(headers=headers)
        if declared is not None:
            response.content_length = declared
        await response.prepare(request)
        self.sent = 0
        try:
            await response.write(head)
            self.sent = len(head)
            for piece in chunks if chunks is not None else iter(lambda: chunk, None):
                if self.sent >= total:
                    break
                await response.write(piece)
                self.sent += len(piece)
        except (ConnectionError, RuntimeError):  # the reader hung up, as it should
            pass
        return response


@pytest.fixture
async def member() -> AsyncIterator[tuple[HostileMember, str]]:
    hostile = HostileMember()
    async with serving(hostile.app()) as url:
        yield hostile, url


@pytest.fixture
async def client(member: tuple[HostileMember, str]) -> AsyncIterator[MemberClient]:
    async with MemberClient(Credentials(member[1], "token"), timeout=30) as made:
        yield made


@contextlib.contextmanager
def memory_growth() -> Iterator[Callable[[], int]]:
    """How far this process's RSS rose above where it was, at its highest while the block ran
    (sampled every few milliseconds from a thread: the loop is busy reading)."""
    process = psutil.Process()
    gc.collect()
    base = peak = process.memory_info().rss
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.wait(0.002):
            peak = max(peak, process.memory_info().rss)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield lambda: peak - base
    finally:
        done.set()
        sampler.join()
        peak = max(peak, process.memory_info().rss)


async def capped(call: Awaitable[Any]) -> tuple[MemberLimitExceeded, int, float]:
    """The limit `call` stopped at, the memory it grew by and the seconds it took."""
    started = time.monotonic()
    with memory_growth() as growth:
        with pytest.raises(MemberLimitExceeded) as raised:
            await call
    return raised.value, growth(), time.monotonic() - started


# -- the executor's client -----------------------------------------------------------------------


async def test_an_endless_list_body_stops_at_the_list_cap(member: tuple[HostileMember, str],
                                                          client: MemberClient) -> None:
    hostile, url = member
    hostile.pods = lambda request: hostile.stream(request, b'{"kind":"PodList","items":[')
    error, grown, took = await capped(client.list("v1", "Pod"))
    assert error.limit == LIMITS.list_bytes and "Limits.list_bytes" in str(error)
    assert str(error).startswith(f"{url}: list Pod: the answer to GET /api/v1/pods is larger than")
    assert grown < GROWTH and took < PROMPTLY, (grown, took)
    assert hostile.sent < HOSTILE_BYTES / 2  # the reader hung up: the member stopped sending


async def test_a_body_declared_too_long_is_refused_before_it_is_read(member: tuple[HostileMember, str],
                                                                     client: MemberClient) -> None:
    hostile, _ = member
    hostile.pods = lambda request: hostile.stream(request, b'{"items":[', declared=HOSTILE_BYTES)
    error, grown, took = await capped(client.list_versioned("v1", "Pod"))
    assert error.limit == LIMITS.list_bytes and grown < GROWTH and took < PROMPTLY
    assert hostile.sent < 20 * MB


async def test_a_compressed_body_counts_as_it_inflates(member: tuple[HostileMember, str],
                                                       client: MemberClient) -> None:
    hostile, _ = member
    squeeze = zlib.compressobj(1, zlib.DEFLATED, 31)  # gzip

    def bomb() -> Iterator[bytes]:
        for _ in range(HOSTILE_BYTES // len(_MiB_CHUNK)):
            yield squeeze.compress(_MiB_CHUNK)
        yield squeeze.flush()

    hostile.pods = lambda request: hostile.stream(
        request, squeeze.compress(b'{"items":['), headers={"Content-Encoding": "gzip"}, chunks=bomb())
    error, grown, took = await capped(client.list("v1", "Pod"))
    assert error.limit == LIMITS.list_bytes and grown < GROWTH and took < PROMPTLY, (grown, took)


async def test_an_endless_watch_line_stops_at_the_line_cap(member: tuple[HostileMember, str],
                                                           client: MemberClient) -> None:
    hostile, url = member
    hostile.watch = lambda request: hostile.stream(
        request, b'{"type":"ADDED","object":{"metadata":{"name":"', chunk=b"a" * (256 * 1024))

    async def first_event() -> None:
        async for _ in client.watch("v1", "Pod", "1"):
            raise AssertionError("a line that never ends is no event")

    error, grown, took = await capped(first_event())
    assert error.limit == LIMITS.watch_line_bytes and "Limits.watch_line_bytes" in str(error)
    assert str(error).startswith(f"{url}: watch Pod: a watch line is longer than")
    assert grown < GROWTH and took < PROMPTLY, (grown, took)


async def test_an_error_with_an_endless_body_keeps_its_status(member: tuple[HostileMember, str],
                                                             client: MemberClient) -> None:
    hostile, _ = member

    async def refuse(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(status=500)
        await response.prepare(request)
        with contextlib.suppress(ConnectionError, RuntimeError):
            for _ in range(HOSTILE_BYTES // len(_MiB_CHUNK)):
                await response.write(_MiB_CHUNK)
        return response

    hostile.apply = refuse
    started = time.monotonic()
    with memory_growth() as growth:
        with pytest.raises(MemberError) as raised:
            await client.apply({"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": "settings", "namespace": "default"}})
    # The status is the answer (a 409 is retried, a 404 is absent), whatever the body.
    assert raised.value.status == 500 and "Limits.object_bytes" in str(raised.value)
    assert growth() < GROWTH and time.monotonic() - started < PROMPTLY


async def test_a_list_too_dense_to_decode_is_not_decoded(member: tuple[HostileMember, str],
                                                         client: MemberClient) -> None:
    hostile, _ = member
    # 40 MB of `{},`, inside the byte cap, would decode to over a GB of empty dicts.
    hostile.pods = lambda request: hostile.stream(request, b'{"items":[{}', chunk=b",{}" * 350_000,
                                                  total=40 * MB)
    error, grown, took = await capped(client.list("v1", "Pod"))
    assert error.limit == LIMITS.list_values and "Limits.list_values" in str(error)
    assert grown < GROWTH and took < PROMPTLY, (grown, took)


async def test_a_list_of_too_many_objects_is_refused(member: tuple[HostileMember, str],
                                                     client: MemberClient) -> None:
    hostile, _ = member
    items = [{"metadata": {"name": f"p{i}"}} for i in range(LIMITS.list_items + 1)]

    async def many(_: web.Request) -> web.Response:
        return web.Response(body=jsonbytes.dumps({"kind": "PodList", "items": items}),
                            content_type="application/json")

    hostile.pods = many
    with pytest.raises(MemberLimitExceeded) as raised:
        await client.list_versioned("v1", "Pod")
    assert raised.value.limit == LIMITS.list_items and "Limits.list_items" in str(raised.value)


@pytest.mark.parametrize("body", [b"{}", b'{"items":5}', b"[]", b"not json", b'{"items":[1]}',
                                  b'{"items":[{"metadata":"x"}]}', b'{"items":[{"metadata":{"name":7}}]}',
                                  b"[" * 100_000])
async def test_a_list_that_is_no_list_is_an_error_never_an_empty_list(member: tuple[HostileMember, str],
                                                                      client: MemberClient, body: bytes) -> None:
    hostile, _ = member

    async def answer(_: web.Request) -> web.Response:
        return web.Response(body=body, content_type="application/json")

    hostile.pods = answer
    with pytest.raises(MemberError):
        await client.list_versioned("v1", "Pod")
    with pytest.raises(MemberError):
        await client.list("v1", "Pod")


async def test_a_watch_that_adds_objects_without_end_drops_its_cache_and_relists(
        member: tuple[HostileMember, str]) -> None:
    hostile, url = member
    limits = Limits(list_items=100)

    def added() -> Iterator[bytes]:
        for i in range(10**9):
            yield jsonbytes.dumps({"type": "ADDED", "object": {"metadata": {
                "name": f"flood{i}", "namespace": "default", "resourceVersion": str(i + 2)}}}) + b"\n"

    hostile.watch = lambda request: hostile.stream(request, b"", chunks=added())
    cluster = cluster_pb2.Cluster()
    cluster.metadata.name = "member1"
    set_condition(cluster.status.conditions, "Ready", TRUE, "ClusterReady", "", RealClock().now())
    most = 0
    client = MemberClient(Credentials(url, "token"), timeout=30, limits=limits)

    async def connect(_: cluster_pb2.Cluster) -> MemberClient:
        return client

    def changed(*_: Any) -> None:
        nonlocal most
        cache = watches.watching("member1").get(("v1", "Pod"))
        most = max(most, len(cache.objects) if cache is not None else 0)

    watches = MemberWatches(RealClock(), connect, lambda _: True, changed, lambda *_: None, backoff=(0.01, 0.05))
    runner = asyncio.create_task(watches.run())
    try:
        await asyncio.sleep(0)
        cache = watches.cache(cluster, ("v1", "Pod"))
        assert cache is not None
        async with asyncio.timeout(30):
            while hostile.lists < 3:
                await asyncio.sleep(0.01)
        # Each overflow dropped the cache and listed again; never more than the limit was held.
        assert most <= limits.list_items
    finally:
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)
        await client.close()


async def test_a_watch_error_s_message_is_cut(member: tuple[HostileMember, str], client: MemberClient) -> None:
    hostile, _ = member
    line = jsonbytes.dumps({"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired",
                                                        "message": HUGE_MESSAGE}}) + b"\n"
    hostile.watch = lambda request: hostile.stream(request, line, total=len(line))
    with pytest.raises(MemberError) as raised:
        async for _ in client.watch("v1", "Pod", "1"):
            pass
    assert raised.value.status == 410 and len(str(raised.value)) < 2 * MAX_MESSAGE_BYTES


# -- the status service's reader -----------------------------------------------------------------


async def test_an_endless_health_answer_reads_as_no_answer(member: tuple[HostileMember, str]) -> None:
    hostile, url = member
    hostile.readyz = lambda request: hostile.stream(request, b"ok")
    session = MemberSession(timeout=30, keepalive=30)
    try:
        started = time.monotonic()
        with memory_growth() as growth:
            health = await session.health(Credentials(url, "token"))
        assert health == Health(online=False, healthy=False)
        assert growth() < 20 * MB and time.monotonic() - started < PROMPTLY
        assert hostile.sent < 20 * MB
    finally:
        await session.close()


async def test_the_status_services_lists_stop_at_the_list_cap(member: tuple[HostileMember, str]) -> None:
    hostile, url = member
    hostile.pods = lambda request: hostile.stream(request, b'{"kind":"PodList","items":[')
    session = MemberSession(timeout=30, keepalive=30)
    reader = MemberReader(session, Credentials(url, "token"))
    try:
        error, grown, took = await capped(reader.list_pods())
        assert error.limit == LIMITS.list_bytes and grown < GROWTH and took < PROMPTLY, (grown, took)

        async def no_list(_: web.Request) -> web.Response:
            return web.json_response({"kind": "Status"})

        hostile.pods = no_list  # an answer that is no list is an error, not a member without pods
        with pytest.raises(MemberError):
            await reader.list_pods()
    finally:
        await session.close()


# -- a member's error in a Work, in etcd -----------------------------------------------------------


async def test_a_4_mib_error_message_reaches_the_work_as_at_most_1_kib(store: Store,
                                                                      member: tuple[HostileMember, str],
                                                                      client: MemberClient) -> None:
    hostile, _ = member

    async def refuse(_: web.Request) -> web.Response:
        return status(422, "Invalid", HUGE_MESSAGE)

    hostile.apply = refuse
    work = work_pb2.Work(api_version="work.karmada.io/v1alpha1", kind="Work")
    work.metadata.namespace, work.metadata.name = execution_namespace("member1"), "settings"
    work.metadata.finalizers.append(EXECUTION_FINALIZER)
    work.spec.workload.manifests.append(codec.raw_json(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "default", "name": "settings"},
         "data": {"mode": "blue"}}))
    stored = await store.create(work)
    cluster = cluster_pb2.Cluster()
    cluster.metadata.name = "member1"
    set_condition(cluster.status.conditions, "Ready", TRUE, "ClusterReady", "", RealClock().now())

    async def connect(_: Any) -> MemberClient:
        return client

    reconciler = ExecutionReconciler(store, RealClock(), Cache([stored], synced=False),  # type: ignore[arg-type]
                                     Cache([cluster]), connect, lambda _: True)  # type: ignore[arg-type]
    with pytest.raises(MemberError) as raised:
        await reconciler.reconcile(f"{work.metadata.namespace}/settings")
    assert raised.value.status == 422 and raised.value.reason == "Invalid"
    written = await store.get(work_pb2.Work, work.metadata.namespace, "settings")
    applied = get_condition(written.status.conditions, APPLIED)
    assert applied is not None and applied.reason == "AppliedFailed"
    assert "admission webhook denied the request: xxx" in applied.message
    assert len(applied.message.encode()) <= MAX_MESSAGE_BYTES
    # And as an Event (the executor's SyncFailed Events quote the same errors).
    recorder = EventRecorder(store, "executor")
    await recorder.warning(written, "SyncFailed", f"Failed to sync work: {raised.value}; {HUGE_MESSAGE}")
    [event] = await events_for(store, written)
    assert len(event.message.encode()) <= MAX_MESSAGE_BYTES
