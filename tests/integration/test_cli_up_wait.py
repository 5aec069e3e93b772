"""`flotilla up --sim-clusters N` returns only when every member is Ready and free of the health
taints that keep the scheduler off it; otherwise one line names those that are not, and why."""

from __future__ import annotations

import asyncio

import pytest

from flotilla.api.taints import TAINT_CLUSTER_NOT_READY
from flotilla.api.v1 import cluster_pb2
from flotilla.plane.local_plane import cluster_not_ready, wait_clusters_ready
from flotilla.store import Store
from tests.factories import make_cluster


def cluster(name: str, ready: str | None = None, reason: str = "", taint: str = "") -> cluster_pb2.Cluster:
    c = make_cluster(name)
    if ready is not None:
        c.status.conditions.add(type="Ready", status=ready, reason=reason)
    if taint:
        c.spec.taints.add(key=taint, effect="NoSchedule")
    return c


@pytest.mark.parametrize(("obj", "why"), [
    (None, "not joined"),
    (cluster("m"), "no Ready condition yet"),
    (cluster("m", "False", "ClusterNotReachable"), "Ready=False, ClusterNotReachable"),
    (cluster("m", "Unknown"), "Ready=Unknown"),
    (cluster("m", "True", taint=TAINT_CLUSTER_NOT_READY), f"Ready, still tainted {TAINT_CLUSTER_NOT_READY}"),
    (cluster("m", "True", taint="dedicated"), ""),  # a user's taint is the user's business
    (cluster("m", "True", "ClusterReady"), ""),
], ids=["missing", "no-condition", "false", "unknown", "tainted", "user-taint", "ready"])
def test_why_a_cluster_is_not_ready(obj: cluster_pb2.Cluster | None, why: str) -> None:
    assert cluster_not_ready(obj) == why


async def test_waits_until_every_cluster_is_ready(store: Store) -> None:
    await store.create(cluster("member1", "True"))
    second = await store.create(cluster("member2", taint=TAINT_CLUSTER_NOT_READY))
    waiting = asyncio.create_task(wait_clusters_ready(store.endpoints or "", ["member1", "member2"], 60))
    await asyncio.sleep(0)  # the first look sees member2 not Ready
    assert not waiting.done()
    second.status.conditions.add(type="Ready", status="True")
    second = await store.update_status(second)
    del second.spec.taints[:]
    await store.update(second)
    await asyncio.wait_for(waiting, 60)


async def test_the_timeout_names_each_cluster_not_ready(store: Store) -> None:
    await store.create(cluster("member1", "True"))
    await store.create(cluster("member2", "False", "ClusterNotReady"))
    with pytest.raises(TimeoutError) as raised:
        await wait_clusters_ready(store.endpoints or "", ["member1", "member2", "member3"], 0)
    assert str(raised.value) == ("clusters not Ready after 0s: member2 (Ready=False, ClusterNotReady); "
                                 "member3 (not joined)")
