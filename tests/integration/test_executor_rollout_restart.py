"""Killing the executor during a rollout of 200 bindings and starting it again converges:
every member object exists exactly once, with the replicas its binding gives it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from flotilla.aio.clock import RealClock
from flotilla.api import codec, registry
from flotilla.api.events import EventType
from flotilla.clusterstatus.clients import MemberClients
from flotilla.member import MemberClient
from flotilla.store import Store
from flotilla.store.informer import Informer
from services.executor.controllers import ExecutionManager, ExecutorConfig, ExecutorControllers
from tests.integration.test_executor_execution import deployment, join
from tests.sim_fixtures import StartSim

APPS = 200


async def run_executor(store: Store) -> asyncio.Task[None]:
    clients = MemberClients(store, timeout=2.0)
    execution = ExecutionManager(store, RealClock(), clients.get, lambda c: c.spec.sync_mode != "Pull",
                                 workers=16)
    binding_side = ExecutorControllers(store, RealClock(), ExecutorConfig(workers=8))

    async def both() -> None:
        try:
            await asyncio.gather(execution.run(), binding_side.run())
        finally:
            await clients.close()

    return asyncio.create_task(both())


async def test_rollout_survives_a_restart(
    store: Store, start_sim: StartSim, member_client: Callable[..., MemberClient]
) -> None:
    server = await start_sim("member1", "member2", clock=RealClock(), pod_ready_delay=0.05, node_pods=400)
    for name in ("member1", "member2"):
        await join(store, server, name)
    await store.create(codec.from_dict({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "apps", "namespace": "default",
                     "labels": {"propagationpolicy.karmada.io/permanent-id": "p-apps"}},
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                        "labelSelector": {"matchLabels": {"rollout": "yes"}}}],
                 "placement": {"clusterAffinity": {"clusterNames": ["member1", "member2"]}}},
    }))
    for i in range(APPS):
        doc = deployment(1)
        doc["metadata"].update(name=f"app{i:03d}", labels={"rollout": "yes"})
        await store.create(codec.from_dict(doc))

    # The scheduler's part, done here: every binding to both clusters, one replica each.
    bindings = Informer(store, registry.RESOURCE_BINDING)
    scheduled: set[str] = set()
    enough, all_works = asyncio.Event(), asyncio.Event()

    async def schedule(kind: EventType, obj: object, old: object) -> None:
        name = obj.metadata.name  # type: ignore[attr-defined]
        if kind == EventType.DELETED or name in scheduled:
            return
        scheduled.add(name)

        def place(b: object) -> bool:
            if b.spec.clusters:  # type: ignore[attr-defined]
                return False
            for cluster in ("member1", "member2"):
                b.spec.clusters.add(name=cluster, replicas=1)  # type: ignore[attr-defined]
            return True

        await store.mutate(registry.RESOURCE_BINDING, "default", name, place)

    bindings.add_handler(schedule)
    works = Informer(store, registry.WORK)

    def count(*_: object) -> None:
        if len(works.keys()) >= APPS // 3:
            enough.set()
        if len(works.keys()) >= 2 * APPS:
            all_works.set()

    works.add_handler(count)
    views = [asyncio.create_task(i.run()) for i in (bindings, works)]
    try:
        first = await run_executor(store)
        async with asyncio.timeout(60):
            await enough.wait()
        first.cancel()
        await asyncio.gather(first, return_exceptions=True)
        second = await run_executor(store)
        try:
            async with asyncio.timeout(90):
                await all_works.wait()
            for name in ("member1", "member2"):
                member = member_client(server, name)
                async with asyncio.timeout(60):
                    while True:
                        found = [d for d in await member.list("apps/v1", "Deployment", "default")
                                 if d["metadata"]["name"].startswith("app")]
                        if len(found) >= APPS:
                            break
                        await asyncio.sleep(0.2)
                names = [d["metadata"]["name"] for d in found]
                assert sorted(names) == [f"app{i:03d}" for i in range(APPS)], "none missing, none twice"
                assert {d["spec"]["replicas"] for d in found} == {1}
        finally:
            second.cancel()
            await asyncio.gather(second, return_exceptions=True)
    finally:
        for view in views:
            view.cancel()
        await asyncio.gather(*views, return_exceptions=True)
    assert len(works.keys()) == 2 * APPS
