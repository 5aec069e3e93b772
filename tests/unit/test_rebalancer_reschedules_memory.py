"""Issue 36: a WorkloadRebalancer moves a workload back after a recovery when failback is off.
In-process on a MemoryStore: the scheduler loop and the rebalancer controller as the executor
wires it (`add_rebalancer`). A Divided binding moved to member2 by a failover stays there (its
replicas still add up, so the scheduler keeps it); a rebalancer naming its Deployment sets
rescheduleTriggeredAt and the scheduler schedules it afresh, back onto member1."""

from __future__ import annotations

import asyncio
from typing import Any

from flotilla.aio.clock import RealClock
from flotilla.api import codec, registry
from flotilla.runtime.manager import Manager
from flotilla.scheduler.framework import Framework
from flotilla.store import MemoryStore
from services.executor.rebalancer import add_rebalancer
from services.scheduler.controllers import SchedulerLoop
from services.scheduler.reconciler import SchedulerOptions
from tests.scheduler_support import Bindings, cluster, placed

KEY = "default/web-deployment"


def binding() -> Any:
    return codec.from_dict({
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
        "metadata": {"name": "web-deployment", "namespace": "default",
                     "labels": {"propagationpolicy.karmada.io/permanent-id": "p-1"}},
        "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "web"},
                 "replicas": 2, "replicaRequirements": {"resourceRequest": {"cpu": "1"}},
                 "placement": {"clusterAffinity": {"clusterNames": ["member1", "member2"]},
                               "replicaScheduling": {"replicaSchedulingType": "Divided",
                                                     "replicaDivisionPreference": "Aggregated"}},
                 "schedulerName": "default-scheduler"},
    })


async def test_a_rebalancer_moves_a_failed_over_workload_back(store: MemoryStore) -> None:
    clock = RealClock()
    await store.create(cluster("member1", cpu="16"))
    await store.create(cluster("member2", cpu="4"))
    scheduler = SchedulerLoop(store, clock, Framework.build("*", installed={}), SchedulerOptions(workers=2))
    executor = Manager(store, clock)
    add_rebalancer(executor, store, clock)
    rbs = Bindings(store, registry.RESOURCE_BINDING)
    tasks = [asyncio.create_task(t) for t in (scheduler.run(), executor.run(), rbs.informer.run())]
    try:
        await rbs.informer.wait_synced()
        await store.create(binding())
        await rbs.wait(KEY, placed(("member1", 2)))

        def failed_over(obj: Any) -> bool:  # what a failover leaves once member1 is back
            del obj.spec.clusters[:]
            obj.spec.clusters.add(name="member2", replicas=2)
            return True

        await store.mutate(registry.RESOURCE_BINDING, "default", "web-deployment", failed_over)
        await rbs.wait(KEY, placed(("member2", 2)))
        # Timestamps are whole seconds, as Kubernetes writes them: a reschedule asked for in the
        # second of the last schedule is no later than it (Karmada's rule, as here). A user's
        # rebalancer comes well after; this test's, a second after.
        await asyncio.sleep(1.1)
        assert [(t.name, t.replicas) for t in rbs.informer.get(KEY).spec.clusters] == [("member2", 2)], \
            "without a rebalancer it stays where the failover put it"

        await store.create(codec.from_dict({
            "apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer", "metadata": {"name": "back"},
            "spec": {"workloads": [{"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default",
                                    "name": "web"}]}}))
        moved = await rbs.wait(KEY, placed(("member1", 2)))
        rebalancer = await store.get(registry.WORKLOAD_REBALANCER, "", "back")
        assert moved.spec.reschedule_triggered_at == rebalancer.metadata.creation_timestamp
        assert [(o.workload.name, o.result) for o in rebalancer.status.observed_workloads] == [("web", "Successful")]
        assert rebalancer.status.HasField("finish_time")
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
