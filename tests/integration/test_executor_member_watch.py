"""Member status by watch, against a real etcd and the simulator: a dropped watch resumes
where it was, one whose version is gone relists, a cluster that is not Ready is not watched,
and a stalled member holds back only its own Works."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import pytest

from flotilla.aio.clock import RealClock
from flotilla.store import Store
from services.executor.controllers import ExecutionManager
from sim import SimCluster
from sim.catalog import builtin
from tests.integration.test_executor_execution import executing, health_of, joined_work, set_ready
from tests.sim_fixtures import StartSim
from tests.watching import Watch

pytestmark = pytest.mark.timeout(60)

DEPLOYMENT = ("apps/v1", "Deployment")


def lists(manager: ExecutionManager, cluster: str) -> int:
    cache = manager.watches.watching(cluster).get(DEPLOYMENT)
    return cache.lists if cache is not None else 0


def churn(cluster: SimCluster, count: int) -> None:
    """Changes the executor does not watch, straight into the member's state."""
    for i in range(count):
        cluster.state.create(builtin("ConfigMap"), "default", {"metadata": {"name": f"churn-{i}"}})


async def test_a_dropped_watch_resumes_and_one_too_old_relists(store: Store, start_sim: StartSim) -> None:
    server = await start_sim("member1", clock=RealClock(), pod_ready_delay=0.05)
    member = server.cluster("member1")
    key = await joined_work(store, server, "member1", 1)
    async with executing(store, backoff=(0.05, 0.2)) as manager:
        watch = Watch(manager.works)
        await watch.until(lambda: health_of(manager.works, key) == ("Healthy", 1))
        assert lists(manager, "member1") == 1

        # Down drops the watch; what changed meanwhile arrives once it reconnects, without a list.
        member.set_fault("down")
        member.set_app_fault("default", "nginx", healthy=False)
        member.set_fault("recover")
        await watch.until(lambda: health_of(manager.works, key)[0] == "Unhealthy")
        assert lists(manager, "member1") == 1

        # The member's history moves past the watch's version while it is away: 410, then a list.
        member.state.store.history.capacity = 5
        member.set_fault("down")
        churn(member, 20)
        member.set_app_fault("default", "nginx", healthy=True)
        member.set_fault("recover")
        await watch.until(lambda: health_of(manager.works, key) == ("Healthy", 1))
        assert lists(manager, "member1") == 2


async def test_no_watch_while_the_cluster_is_not_ready(store: Store, start_sim: StartSim) -> None:
    server = await start_sim("member1", clock=RealClock(), pod_ready_delay=0.05)
    key = await joined_work(store, server, "member1", 1)
    async with executing(store) as manager:
        watch = Watch(manager.works)
        await watch.until(lambda: health_of(manager.works, key) == ("Healthy", 1))
        assert list(manager.watches.watching("member1")) == [DEPLOYMENT]

        await set_ready(store, "member1", "False")
        # Watches stopping changes no Work, so the informer-driven `until` cannot see it: poll.
        async with asyncio.timeout(30):
            while list(manager.watches.watching("member1")):
                await asyncio.sleep(0.05)
        server.cluster("member1").set_app_fault("default", "nginx", healthy=False)
        await set_ready(store, "member1", "True")
        # Ready again: a fresh list brings what changed while it was not watched.
        await watch.until(lambda: health_of(manager.works, key)[0] == "Unhealthy")
        assert list(manager.watches.watching("member1")) == [DEPLOYMENT]


async def test_a_stalled_member_holds_back_only_its_own_works(store: Store, start_sim: StartSim) -> None:
    server = await start_sim("member1", "member2", clock=RealClock(), pod_ready_delay=0.05)
    keys = {name: await joined_work(store, server, name, 1) for name in ("member1", "member2")}
    async with executing(store, backoff=(0.05, 0.2)) as manager:
        watch = Watch(manager.works)
        await watch.until(lambda: all(health_of(manager.works, k) == ("Healthy", 1) for k in keys.values()))

        # member2 hangs: its open watch goes quiet, and any new request to it waits.
        stalled = server.cluster("member2")
        stalled.set_fault("unreachable")
        stalled.set_app_fault("default", "nginx", healthy=False)
        for _ in range(3):
            server.cluster("member1").set_app_fault("default", "nginx", healthy=False)
            await watch.until(lambda: health_of(manager.works, keys["member1"])[0] == "Unhealthy", timeout=5)
            server.cluster("member1").set_app_fault("default", "nginx", healthy=True)
            await watch.until(lambda: health_of(manager.works, keys["member1"])[0] == "Healthy", timeout=5)
        assert health_of(manager.works, keys["member2"])[0] == "Healthy"  # not seen yet: it is stalled
        stalled.set_fault("recover")
        await watch.until(lambda: health_of(manager.works, keys["member2"])[0] == "Unhealthy")


async def test_a_resync_reports_the_cached_objects_again_without_a_list(store: Store, start_sim: StartSim) -> None:
    server = await start_sim("member1", clock=RealClock(), pod_ready_delay=0.05)
    key = await joined_work(store, server, "member1", 1)
    async with executing(store) as manager:
        manager.watches.resync = 0.2
        deployment = ("member1", "Deployment", [("default", "nginx")])
        reported: list[tuple[str, str, list[tuple[str, str]]]] = []
        again = asyncio.Event()
        react = manager.watches.on_change

        def record(cluster: str, api_version: str, kind: str, objects: Iterable[tuple[str, str]]) -> None:
            objects = list(objects)
            reported.append((cluster, kind, objects))
            if reported.count(deployment) >= 4:
                again.set()
            react(cluster, api_version, kind, objects)

        manager.watches.on_change = record
        await Watch(manager.works).until(lambda: health_of(manager.works, key) == ("Healthy", 1))
        # Nothing changes on the member once it is Healthy: what keeps coming is the resync.
        await asyncio.wait_for(again.wait(), 30)
        assert lists(manager, "member1") == 1
        assert health_of(manager.works, key) == ("Healthy", 1)
