"""The executor's execution side with a hostile ResourceInterpreterCustomization (issue 35): the
Works of the objects it applies to read Unknown, each with a Warning Event naming the
customization; a Work whose health a native rule decides reads Healthy meanwhile; the event loop
is never blocked; and when the executor stops, none of its interpreter workers is left."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from flotilla.aio.clock import RealClock
from flotilla.api import codec, registry
from flotilla.api.keys import execution_namespace
from flotilla.api.v1 import config_pb2, work_pb2
from flotilla.api.wellknown import EXECUTION_FINALIZER
from flotilla.store import Store
from flotilla.store.events import WARNING, EventRecorder
from tests.integration.test_executor_execution import deployment, executing, health_of, join
from tests.interpreter_support import HOSTILE, MAX_LOOP_LAG, LoopLag, health_script, until_gone
from tests.sim_fixtures import StartSim
from tests.watching import Watch

CUSTOMIZATION = "hostile-configmaps"
CONFIG_MAPS = 30


def hostile_customization(body: str) -> config_pb2.ResourceInterpreterCustomization:
    return config_pb2.ResourceInterpreterCustomization(
        api_version="config.karmada.io/v1alpha1", kind="ResourceInterpreterCustomization",
        metadata={"name": CUSTOMIZATION},
        spec={"target": {"api_version": "v1", "kind": "ConfigMap"},
              "customizations": {"health_interpretation": {"lua_script": health_script(body)}}},
    )


async def create_work(store: Store, cluster: str, name: str, manifest: dict[str, Any]) -> str:
    work = work_pb2.Work(api_version="work.karmada.io/v1alpha1", kind="Work")
    work.metadata.name, work.metadata.namespace = name, execution_namespace(cluster)
    work.metadata.finalizers.append(EXECUTION_FINALIZER)
    work.spec.workload.manifests.append(codec.raw_json(manifest))
    created = await store.create(work)
    return f"{created.metadata.namespace}/{created.metadata.name}"


async def test_a_hostile_health_script_reads_unknown_with_an_event_and_blocks_nothing(
        store: Store, start_sim: StartSim) -> None:
    server = await start_sim("member1", clock=RealClock(), pod_ready_delay=0.05)
    await join(store, server, "member1")
    await store.create(hostile_customization(HOSTILE["backtracking-find"]))
    config_maps = [await create_work(store, "member1", f"cm-{i}", {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}", "namespace": "default"},
        "data": {"key": "value"}}) for i in range(CONFIG_MAPS)]
    nginx = await create_work(store, "member1", "nginx", deployment(1))
    seen: set[int] = set()
    async with LoopLag() as lag, executing(store, events=EventRecorder(store, "executor")) as manager:
        async def collect_pids() -> None:
            while True:
                seen.update(manager.scripts.pids)
                await asyncio.sleep(0.02)

        collecting = asyncio.create_task(collect_pids())
        try:
            watch = Watch(manager.works)
            started = time.monotonic()
            # The native rule's object is not held up by the script's.
            await watch.until(lambda: health_of(manager.works, nginx)[0] == "Healthy", timeout=30)
            assert time.monotonic() - started < 20
            await watch.until(lambda: all(health_of(manager.works, key)[0] == "Unknown" for key in config_maps),
                              timeout=60)
            async with asyncio.timeout(30):
                while True:
                    listed = await store.list(registry.EVENT, execution_namespace("member1"))
                    warnings = [e for e in listed.items if e.reason == "InterpretHealthFailed"]
                    if len(warnings) >= CONFIG_MAPS:
                        break
                    await asyncio.sleep(0.1)
            assert all(e.type == WARNING and e.message.startswith(f"ResourceInterpreterCustomization "
                                                                  f"{CUSTOMIZATION}: Lua script ")
                       for e in warnings), [e.message for e in warnings[:3]]
            assert {e.involved_object.name for e in warnings} == {key.split("/")[1] for key in config_maps}
            # A few workers were killed and replaced, then the script was suspended.
            assert manager.scripts.spawned > manager.scripts.size
            assert manager.scripts.suspended_scripts == 1
        finally:
            collecting.cancel()
            await asyncio.gather(collecting, return_exceptions=True)
    assert lag.worst < MAX_LOOP_LAG, f"the loop was blocked for {lag.worst:.2f}s"
    assert seen
    await until_gone(seen, timeout=10)
