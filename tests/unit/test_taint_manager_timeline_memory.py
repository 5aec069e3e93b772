"""The taint timeline of a failing cluster through the running taint manager, on a fake clock
and a MemoryStore."""

from __future__ import annotations

import pytest

from flotilla.aio.clock import FakeClock, RealClock
from flotilla.api import registry
from flotilla.api.conditions import set_condition
from flotilla.api.v1 import cluster_pb2
from flotilla.store import MemoryStore
from tests.factories import make_cluster
from tests.taint_support import NOT_READY, running, taints_of
from tests.watching import Watch


@pytest.mark.parametrize("gate", [True, False])
async def test_failing_cluster_gets_no_execute_exactly_at_the_timeout(store: MemoryStore, gate: bool) -> None:
    clock = FakeClock(start=RealClock().now().replace(microsecond=0))
    cluster = make_cluster("member1")
    cluster.spec.taints.add(key="maintenance", effect="NoSchedule")
    cluster = await store.create(cluster)
    set_condition(cluster.status.conditions, "Ready", "False", "ClusterNotReachable", "down", clock.now())
    await store.update_status(cluster)
    async with running(store, clock, failover_gate=gate) as manager:
        watch = Watch(manager.clusters)
        await watch.until(lambda: (NOT_READY, "NoSchedule") in taints_of(manager.clusters, "member1"))
        await clock.advance(299)
        assert (NOT_READY, "NoExecute") not in taints_of(manager.clusters, "member1")
        await clock.advance(1)
        if gate:
            await watch.until(lambda: (NOT_READY, "NoExecute") in taints_of(manager.clusters, "member1"))
        else:
            await clock.advance(600)
            assert (NOT_READY, "NoExecute") not in taints_of(manager.clusters, "member1")

        def recover(obj: cluster_pb2.Cluster) -> None:
            set_condition(obj.status.conditions, "Ready", "True", "ClusterReady", "ok", clock.now())

        await store.mutate(registry.CLUSTER, "", "member1", recover, status=True)
        await watch.until(lambda: taints_of(manager.clusters, "member1") == {("maintenance", "NoSchedule")})
