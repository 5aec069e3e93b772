"""An etcd restart (issue 17, part 1), end to end: a plane on an etcd of the test's own, stopped
until every leader-elected service has given up leadership, and every executor and scheduler
replica its share of the work, and says so (NOT_SERVING, with a reason), then started again. Every service
leads again within its lease plus a few seconds, and failovers work: one started after the
restart, and one that etcd's restart interrupts.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from flotilla.api import registry
from flotilla.api.conditions import get_condition
from flotilla.api.v1 import cluster_pb2
from flotilla.cli.status import InstanceStatus, check_health, collect
from flotilla.plane.profiles import PROFILES
from flotilla.runtime.flags import duration
from flotilla.store import Store
from flotilla.store.embedded import EmbeddedEtcd
from tests.e2e.failover_support import History, Plane, history, placed, settled
from tests.e2e.planes import flotilla_up
from tests.factories import EXAMPLES_DIR

pytestmark = pytest.mark.e2e

MEMBERS = ["member1", "member2", "member3"]
KEY = "default/nginx-deployment"
LEASE = duration(PROFILES["demo"]["FLOTILLA_LEADER_ELECT_LEASE_DURATION"])
# "Within its lease plus a few seconds", with room for a loaded 2-core machine.
LEAD_AGAIN_WITHIN = LEASE + 12


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Plane, EmbeddedEtcd]]:
    etcd = EmbeddedEtcd(tmp_path_factory.mktemp("etcd"))
    etcd.start()
    try:
        with flotilla_up(tmp_path_factory, len(MEMBERS), "--etcd-endpoints", etcd.endpoint) as (data_dir, _):
            yield Plane(data_dir, etcd.endpoint), etcd
    finally:
        etcd.stop()


async def leader_elected(plane: Plane) -> list[InstanceStatus]:
    store = await Store.connect(plane.endpoint)
    try:
        statuses = await collect(store)
    finally:
        await store.close()
    return statuses


async def restart_etcd(plane: Plane, etcd: EmbeddedEtcd) -> float:
    """Stop etcd until every service that led has lost leadership and says why; start it again.
    Returns the seconds from etcd's return to every one of them leading and SERVING again."""
    before = await leader_elected(plane)
    leaders = {s.endpoint.service: s.endpoint.address for s in before if s.leader}
    assert {"taint_manager", "status", "eviction"} <= set(leaders), leaders
    # The executor and the scheduler elect no leader: each replica does its share of the work, and
    # without etcd holds none, and says so.
    sharing = {s.endpoint.service: s.endpoint.address for s in before
               if s.endpoint.service in ("executor", "scheduler")}
    assert set(sharing) == {"executor", "scheduler"}, before
    why = {**{name: "leadership" for name in leaders}, **{name: "holds no shards" for name in sharing}}
    await asyncio.to_thread(etcd.stop)
    deadline = time.monotonic() + LEASE + 20
    while True:
        answers = {name: await check_health(address, name) for name, address in {**leaders, **sharing}.items()}
        if all(health == "NOT_SERVING" and why[name] in reason for name, (health, reason) in answers.items()):
            break
        assert time.monotonic() < deadline, f"services still serving without etcd: {answers}"
        # gRPC health gives no event to await: poll it.
        await asyncio.sleep(0.2)
    await asyncio.to_thread(etcd.start)
    back = time.monotonic()
    while True:
        statuses = await leader_elected(plane)
        leading = {s.endpoint.service for s in statuses if s.leader and s.health == "SERVING"}
        if set(leaders) <= leading and all(s.health == "SERVING" for s in statuses):
            elapsed = time.monotonic() - back
            print(f"\nevery service leading again {elapsed:.2f}s after etcd returned")
            return elapsed
        assert time.monotonic() - back < LEAD_AGAIN_WITHIN, [
            (s.endpoint.service, s.leader, s.health, s.reason) for s in statuses]
        await asyncio.sleep(0.2)


async def recover(plane: Plane, clusters: History[cluster_pb2.Cluster], member: str) -> None:
    await plane.fault(member, "recover")
    await clusters.until(lambda: settled(clusters.get(member)), 90, f"{member} Ready and untainted")


@pytest.mark.timeout(240)
async def test_services_lead_again_after_etcd_restarts_and_failover_still_works(
        plane: tuple[Plane, EmbeddedEtcd]) -> None:
    ctl, etcd = plane
    await ctl.ok("apply", "-f", str(EXAMPLES_DIR / "nginx-divided.yaml"))
    async with history(ctl, registry.RESOURCE_BINDING) as rbs:
        await rbs.until(lambda: placed(rbs.get(KEY)) == [("member1", 1), ("member2", 2)], 90, "nginx placed")
    elapsed = await restart_etcd(ctl, etcd)
    assert elapsed < LEAD_AGAIN_WITHIN
    async with (history(ctl, registry.RESOURCE_BINDING) as rbs, history(ctl, registry.CLUSTER) as clusters):
        await ctl.fault("member1", "down")
        await rbs.until(lambda: placed(rbs.get(KEY)) == [("member2", 3)]
                        and not rbs.get(KEY).spec.graceful_eviction_tasks,  # type: ignore[union-attr]
                        120, "nginx failed over to member2, its eviction task done")
        await recover(ctl, clusters, "member1")


@pytest.mark.timeout(240)
async def test_a_failover_interrupted_by_an_etcd_restart_completes(plane: tuple[Plane, EmbeddedEtcd]) -> None:
    ctl, etcd = plane
    async with history(ctl, registry.CLUSTER) as clusters:
        await ctl.fault("member2", "down")

        def not_ready() -> bool:
            cluster = clusters.get("member2")
            ready = get_condition(cluster.status.conditions, "Ready") if cluster is not None else None
            return ready is not None and ready.status != "True"

        await clusters.until(not_ready, 60, "member2 not Ready")
    await restart_etcd(ctl, etcd)
    async with (history(ctl, registry.RESOURCE_BINDING) as rbs, history(ctl, registry.CLUSTER) as clusters):
        await rbs.until(lambda: [c for c, _ in placed(rbs.get(KEY))] == ["member1"]
                        and not rbs.get(KEY).spec.graceful_eviction_tasks,  # type: ignore[union-attr]
                        120, "nginx failed over to member1, its eviction task done")
        await recover(ctl, clusters, "member2")
