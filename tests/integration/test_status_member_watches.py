"""Issue 14: the status service reads a Ready Push member's nodes and pods from watches once they
have listed, keeping only what the summaries read, instead of listing every pod at every
collection; a member that leaves Ready is listed again, and its watches stop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from flotilla.aio.clock import RealClock
from flotilla.api.conditions import set_condition
from flotilla.api.events import EventType, WatchEvent
from flotilla.api.v1 import cluster_pb2
from flotilla.clusterstatus.collect import Collected, collect
from flotilla.clusterstatus.push_members import NODES, PODS, SUMMARY_KINDS, PushMembers
from flotilla.member import Credentials, MemberClient, load_kubeconfig
from flotilla.member.watches import MemberWatches
from sim import SimServer
from sim.catalog import builtin
from tests.sim_fixtures import StartSim

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


def member1(ready: str) -> cluster_pb2.Cluster:
    cluster = cluster_pb2.Cluster()
    cluster.metadata.name = "member1"
    set_condition(cluster.status.conditions, "Ready", ready, "Test", "set by the test", RealClock().now())
    return cluster


@pytest.fixture
async def server(start_sim: StartSim) -> SimServer:
    return await start_sim("member1", clock=RealClock(), pod_ready_delay=0)


@pytest.fixture
async def watched(server: SimServer) -> AsyncIterator[tuple[MemberWatches, PushMembers]]:
    credentials = load_kubeconfig(server.kubeconfig_path("member1"))
    client = MemberClient(credentials, timeout=5.0)

    async def connect(_: cluster_pb2.Cluster) -> MemberClient:
        return client

    async def load(_: cluster_pb2.Cluster) -> Credentials:
        return credentials

    watches = MemberWatches(RealClock(), connect, lambda _: True, lambda *_: None, lambda *_: None,
                            keep=SUMMARY_KINDS, backoff=(0.05, 0.2))
    running = asyncio.create_task(watches.run())
    try:
        async with PushMembers(load, 5.0, probe_period=1, collect_period=5, watches=watches) as members:
            yield watches, members
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        await client.close()


async def until_collected(members: PushMembers, cluster: cluster_pb2.Cluster, pods: str) -> Collected:
    async with asyncio.timeout(30):
        while True:
            collected = await collect(await members.get(cluster))
            if collected.resource_summary["allocated"].get("pods", "0") == pods:
                return collected
            await asyncio.sleep(0.02)


async def test_nodes_and_pods_come_from_the_watches_once_listed(
        server: SimServer, watched: tuple[MemberWatches, PushMembers]) -> None:
    watches, members = watched
    ready = member1("True")
    listed = await collect(await members.get(ready))  # before the watches have listed: by a list
    async with asyncio.timeout(30):
        while not all((c := watches.watching("member1").get(kind)) is not None and c.synced for kind in (NODES, PODS)):
            await asyncio.sleep(0.02)
    reader = await members.get(ready)
    assert await collect(reader) == listed, "the same summaries from the caches"
    # Kept as the summaries read them: no metadata, no image, no status but the phase.
    assert all(set(node) == {"status"} for node in await reader.list_nodes())

    server.cluster("member1").state.create(builtin("Pod"), "default", {
        "metadata": {"name": "p1"},
        "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "250m"}}}]}})
    collected = await until_collected(members, ready, "1")
    assert collected.resource_summary["allocated"]["cpu"] == "250m"
    pods = await (await members.get(ready)).list_pods()
    assert [set(p) for p in pods] == [{"spec", "status"}] and pods[0]["spec"]["nodeName"]
    cache = watches.watching("member1")[PODS]
    assert cache.lists == 1, "the new pod came by the watch"

    # Not Ready: the watches stop, and a collection lists again.
    watches.on_cluster(WatchEvent(EventType.MODIFIED, member1("False")))
    assert watches.watching("member1") == {}
    listed_pods = await (await members.get(member1("False"))).list_pods()
    assert [p["metadata"]["name"] for p in listed_pods] == ["p1"]
