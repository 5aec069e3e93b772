"""The simulator's watch: history and 410, initial state, resume, selectors, bookmarks,
timeouts, and faults reaching open streams."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest

from flotilla.aio.clock import FakeClock
from sim import SimCluster
from sim.catalog import builtin
from sim.history import History
from tests.sim_fixtures import cluster_tls

if TYPE_CHECKING:
    from tests.sim_fixtures import KubeHttp, StartSim

pytestmark = pytest.mark.timeout(10)

CM = "/api/v1/namespaces/default/configmaps"


def configmap(name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels or {}}, "data": data}


def test_history_keeps_the_last_changes_and_says_when_a_version_is_gone() -> None:
    history = History(capacity=4)
    for version in range(1, 11):
        history.record("MODIFIED", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{version}"}},
                       version)
    assert history.head == 10
    kept = history.since(history.floor)
    assert kept is not None and [c.resource_version for c in kept][-4:] == [7, 8, 9, 10]
    assert history.since(history.floor - 1) is None
    tail = history.since(8)
    assert tail is not None and [c.resource_version for c in tail] == [9, 10]
    assert history.since(10) == []
    assert (kept[-1].group, kept[-1].kind, json.loads(kept[-1].data)["metadata"]["name"]) == ("", "ConfigMap", "c10")


class Stream:
    """An open watch, read event by event."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response

    async def next(self) -> dict[str, Any]:
        line = await self.response.content.readline()
        assert line, "the stream ended"
        event: dict[str, Any] = json.loads(line)
        return event

    async def ended(self) -> bool:
        try:
            return await self.response.content.readline() == b""
        except aiohttp.ClientPayloadError:
            return True  # dropped rather than finished


@pytest.fixture
async def watch() -> AsyncIterator[Callable[..., Any]]:
    async with aiohttp.ClientSession() as session:
        responses: list[aiohttp.ClientResponse] = []

        async def open_watch(cluster: SimCluster, path: str, accept: str = "application/json", **params: str) -> Stream:
            response = await session.get(cluster.url + path, params={"watch": "1", **params},
                                         headers={"Authorization": f"Bearer {cluster.token}", "Accept": accept},
                                         ssl=cluster_tls(cluster))
            responses.append(response)
            assert response.status == 200
            return Stream(response)

        yield open_watch
        for response in responses:
            response.close()


async def test_watch_from_now_from_a_version_and_from_a_version_too_old(
    start_sim: StartSim, kube_http: Callable[..., KubeHttp], watch: Callable[..., Any]
) -> None:
    server = await start_sim()
    cluster = server.cluster("member1")
    api = kube_http(cluster)
    await api.ok("POST", CM, configmap("a", x="1"))
    listed = await api.ok("GET", CM)
    stream = await watch(cluster, CM)  # no version: the current state first
    first = await stream.next()
    assert (first["type"], first["object"]["metadata"]["name"], first["object"]["kind"]) == ("ADDED", "a", "ConfigMap")
    await api.ok("POST", CM, configmap("b"))
    await api.ok("PATCH", f"{CM}/a", {"data": {"x": "2"}}, content_type="application/merge-patch+json")
    await api.ok("DELETE", f"{CM}/b")
    events = [await stream.next() for _ in range(3)]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b")]
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions) and len(set(versions)) == 3

    # Resuming from the list's version replays exactly what came after it.
    resumed = await watch(cluster, CM, resourceVersion=listed["metadata"]["resourceVersion"])
    assert [(await resumed.next())["type"] for _ in range(3)] == ["ADDED", "MODIFIED", "DELETED"]

    # A version the history no longer holds: ERROR 410 Expired, then the stream ends.
    cluster.state.store.history.capacity = 2
    for i in range(5):
        await api.ok("PATCH", f"{CM}/a", {"data": {"x": str(i + 3)}}, content_type="application/merge-patch+json")
    gone = await watch(cluster, CM, resourceVersion=listed["metadata"]["resourceVersion"])
    error = await gone.next()
    assert error["type"] == "ERROR"
    assert (error["object"]["code"], error["object"]["reason"]) == (410, "Expired")
    assert await gone.ended()


@pytest.fixture
async def member(start_sim: StartSim, kube_http: Callable[..., KubeHttp]) -> tuple[SimCluster, KubeHttp, str]:
    """The cluster, its API, and the resourceVersion it is at."""
    cluster = (await start_sim()).cluster("member1")
    api = kube_http(cluster)
    return cluster, api, (await api.ok("GET", CM))["metadata"]["resourceVersion"]


async def test_watch_filters_by_namespace_labels_fields_and_kind(
    member: tuple[SimCluster, KubeHttp, str], watch: Callable[..., Any]
) -> None:
    cluster, api, version = member
    labelled = await watch(cluster, "/api/v1/configmaps", resourceVersion=version, labelSelector="app=web")
    by_name = await watch(cluster, CM, resourceVersion=version, fieldSelector="metadata.name=two")
    await api.ok("POST", "/api/v1/namespaces/other/configmaps", configmap("one", {"app": "web"}))
    await api.ok("POST", CM, configmap("two"))
    await api.ok("POST", "/api/v1/namespaces/default/secrets", {"metadata": {"name": "s"}})
    await api.ok("POST", CM, configmap("three", {"app": "web"}))
    assert [(await labelled.next())["object"]["metadata"]["name"] for _ in range(2)] == ["one", "three"]
    assert (await by_name.next())["object"]["metadata"]["name"] == "two"
    status, _ = await api.get("/api/v1/configmaps", watch="1", resourceVersion="x")
    assert status == 400


async def test_bookmarks_and_timeout(
    member: tuple[SimCluster, KubeHttp, str], watch: Callable[..., Any], sim_clock: FakeClock
) -> None:
    cluster, api, version = member
    stream = await watch(cluster, CM, resourceVersion=version, allowWatchBookmarks="true", timeoutSeconds="8")
    # Changes to another kind move the cluster's version on; the bookmark carries it.
    await api.ok("POST", "/api/v1/namespaces/default/secrets", {"metadata": {"name": "s"}})
    head = cluster.state.store.revision
    await sim_clock.advance(5)
    bookmark = await stream.next()
    assert bookmark["type"] == "BOOKMARK"
    assert bookmark["object"]["metadata"]["resourceVersion"] == str(head)
    await sim_clock.advance(4)
    assert await stream.ended()


async def test_down_drops_open_watches_and_unreachable_holds_their_events(
    member: tuple[SimCluster, KubeHttp, str], watch: Callable[..., Any]
) -> None:
    cluster, _, version = member
    stream = await watch(cluster, CM, resourceVersion=version)
    cluster.set_fault("unreachable")
    cluster.state.create(builtin("ConfigMap"), "default", configmap("held"))
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.2):
            await stream.next()
    cluster.set_fault("recover")
    assert (await stream.next())["object"]["metadata"]["name"] == "held"
    cluster.set_fault("down")
    assert await stream.ended()


async def test_stopping_the_server_ends_open_watches(start_sim: StartSim, watch: Callable[..., Any]) -> None:
    server = await start_sim()
    stream = await watch(server.cluster("member1"), CM)
    async with asyncio.timeout(3):
        await server.stop()
        assert await stream.ended()


async def test_kubectl_get_watch_sees_changes_as_table_rows(
    member: tuple[SimCluster, KubeHttp, str], watch: Callable[..., Any]
) -> None:
    cluster, api, version = member
    stream = await watch(cluster, CM, accept="application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
                         resourceVersion=version)
    await api.ok("POST", CM, configmap("shown", x="1"))
    event = await stream.next()
    assert (event["type"], event["object"]["kind"]) == ("ADDED", "Table")
    assert [row["cells"][0] for row in event["object"]["rows"]] == ["shown"]
