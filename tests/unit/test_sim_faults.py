"""Cluster faults (down, unhealthy, unreachable, slow, recover) and the admin API that sets them."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import aiohttp
import pytest

from flotilla.aio.clock import FakeClock, RealClock
from sim import admin
from sim.faults import UNREACHABLE_CAP, Fault
from tests.sim_fixtures import cluster_tls

if TYPE_CHECKING:
    from tests.sim_fixtures import KubeHttp, StartSim

pytestmark = pytest.mark.timeout(10)


async def test_down_drops_the_connection_for_that_cluster_only(start_sim: StartSim,
                                                               kube_http: Callable[..., KubeHttp]) -> None:
    server = await start_sim("member1", "member2")
    one, two = server.cluster("member1"), server.cluster("member2")
    one.set_fault("down")
    with pytest.raises(aiohttp.ClientConnectionError):
        await kube_http(one).get("/readyz")
    assert await kube_http(two).get("/readyz") == (200, "ok")
    one.set_fault("recover")
    assert await kube_http(one).get("/readyz") == (200, "ok")


async def test_unhealthy_fails_health_endpoints_only(start_sim: StartSim,
                                                     kube_http: Callable[..., KubeHttp]) -> None:
    server = await start_sim()
    cluster = server.cluster("member1")
    cluster.set_fault(Fault.UNHEALTHY)
    api = kube_http(cluster)
    for path in ("/readyz", "/healthz", "/livez"):
        status, text = await api.get(path)
        assert status == 500 and "check failed" in text
    assert (await api.get("/api/v1/nodes"))[0] == 200


async def test_unreachable_hangs_until_the_client_gives_up(start_sim: StartSim) -> None:
    server = await start_sim()
    cluster = server.cluster("member1")
    cluster.set_fault("unreachable")
    headers = {"Authorization": f"Bearer {cluster.token}"}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=0.3)) as session:
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            await session.get(cluster.url + "/readyz", headers=headers, ssl=cluster_tls(cluster))
        assert 0.3 <= time.monotonic() - started < 2


async def test_recover_releases_held_requests(start_sim: StartSim, kube_http: Callable[..., KubeHttp]) -> None:
    server = await start_sim()
    cluster = server.cluster("member1")
    cluster.set_fault("unreachable")
    held = asyncio.create_task(kube_http(cluster).get("/version"))
    await asyncio.sleep(0.1)
    assert not held.done()
    cluster.set_fault("recover")
    status, version = await asyncio.wait_for(held, 2)
    assert status == 200 and version["gitVersion"] == "v1.31.0"


async def test_unreachable_hold_is_capped_on_the_clock(start_sim: StartSim, kube_http: Callable[..., KubeHttp],
                                                       sim_clock: FakeClock) -> None:
    server = await start_sim()
    cluster = server.cluster("member1")
    cluster.set_fault("unreachable")
    # A POST, because aiohttp retries an idempotent request once when the connection drops.
    held = asyncio.create_task(kube_http(cluster).request("POST", "/api/v1/namespaces/default/configmaps", {}))
    await asyncio.wait_for(sim_clock.wait_for_sleepers(), 2)
    await sim_clock.advance(UNREACHABLE_CAP - 1)
    assert not held.done()
    await sim_clock.advance(1)
    with pytest.raises(aiohttp.ClientConnectionError):
        await asyncio.wait_for(held, 2)


async def test_stopping_the_server_ends_held_requests_promptly(start_sim: StartSim,
                                                               kube_http: Callable[..., KubeHttp]) -> None:
    server = await start_sim()
    cluster = server.cluster("member1")
    cluster.set_fault("unreachable")
    held = asyncio.create_task(kube_http(cluster).get("/version"))
    await asyncio.sleep(0.1)
    started = time.monotonic()
    await server.stop()
    assert time.monotonic() - started < 1
    with pytest.raises(aiohttp.ClientConnectionError):
        await asyncio.wait_for(held, 2)


async def test_slow_adds_latency(start_sim: StartSim, kube_http: Callable[..., KubeHttp]) -> None:
    server = await start_sim(clock=RealClock())
    cluster = server.cluster("member1")
    api = kube_http(cluster)
    started = time.monotonic()
    await api.get("/readyz")
    fast = time.monotonic() - started
    cluster.set_fault("slow", latency=0.2)
    started = time.monotonic()
    assert await api.get("/readyz") == (200, "ok")
    slow = time.monotonic() - started
    assert 0.2 <= slow < 0.2 + fast + 0.5


async def test_admin_api_lists_adds_and_sets_faults(start_sim: StartSim, kube_http: Callable[..., KubeHttp]) -> None:
    server = await start_sim("member1", "member2")
    address = server.address
    # A change carries the token the simulator wrote to its data dir (tests/integration/test_sim_admin_auth.py).
    token = server.admin_token
    listed = await admin.list_clusters(address)
    assert [c["name"] for c in listed] == ["member1", "member2"]
    assert listed[0]["url"] == server.url("member1")
    assert listed[0]["kubeconfig"] == str(server.kubeconfig_path("member1"))
    assert listed[0]["fault"] == "none"

    state = await admin.set_fault(address, "member2", "slow", latency=0.5, token=token)
    assert (state["fault"], state["latency"]) == ("slow", 0.5)
    assert (await admin.set_fault(f"http://{address}", "member2", "recover", token=token))["fault"] == "none"
    assert (await admin.set_fault(address, "member1", "down", data_dir=server.data_dir))["fault"] == "down"
    assert server.cluster("member1").fault is Fault.DOWN

    state = await admin.set_app_fault(address, "member2", "default", "web", healthy=False, kind="Deployment",
                                        token=token)
    assert state["appFaults"] == [{"namespace": "default", "name": "web", "kind": "Deployment"}]
    assert (await admin.set_app_fault(address, "member2", "default", "web", healthy=True,
                                         token=token))["appFaults"] == []

    added = await admin.add_cluster(address, "member3", token=token)
    assert added["url"] == server.url("member3")
    assert server.kubeconfig_path("member3").is_file()
    assert (await kube_http(server.cluster("member3")).get("/readyz")) == (200, "ok")


async def test_admin_api_errors_are_reported(start_sim: StartSim) -> None:
    server = await start_sim()
    token = server.admin_token
    with pytest.raises(admin.AdminError, match="unknown fault 'melt'"):
        await admin.set_fault(server.address, "member1", "melt", token=token)
    with pytest.raises(admin.AdminError, match="HTTP 404: no cluster 'nope'"):
        await admin.set_fault(server.address, "nope", "down", token=token)
    with pytest.raises(admin.AdminError, match="already exists"):
        await admin.add_cluster(server.address, "member1", token=token)
    with pytest.raises(admin.AdminError, match="DNS label"):
        await admin.add_cluster(server.address, "Bad_Name", token=token)
    await server.stop()
    with pytest.raises(admin.AdminError, match="unreachable"):
        await admin.list_clusters(server.address)


async def test_kubeconfigs_survive_a_restart(start_sim: StartSim, kube_http: Callable[..., KubeHttp]) -> None:
    """Flotilla stores a kubeconfig at join time: after a restart on the same data directory each
    cluster keeps its token, its URL (port) and the CA that signs the new serving certificate."""
    first = await start_sim("member1", "member2")
    before = {name: first.kubeconfig_path(name).read_text() for name in ("member1", "member2")}
    assert first.url("member1") != first.url("member2")
    await first.stop()
    again = type(first)(first.clock, first.data_dir)
    again.add_cluster("member1")
    again.add_cluster("member2")
    await again.start()
    try:
        assert {name: again.kubeconfig_path(name).read_text() for name in ("member1", "member2")} == before
        assert await kube_http(again.cluster("member2")).get("/readyz") == (200, "ok")
    finally:
        await again.stop()


async def test_a_restart_refuses_to_move_a_cluster_whose_port_was_taken(start_sim: StartSim) -> None:
    first = await start_sim()
    port = int(first.url("member1").rsplit(":", 1)[1])
    await first.stop()
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        again = type(first)(first.clock, first.data_dir)
        again.add_cluster("member1")
        with pytest.raises(OSError, match=rf"cluster 'member1' cannot listen on 127.0.0.1:{port}.*delete .*member1"):
            await again.start()
