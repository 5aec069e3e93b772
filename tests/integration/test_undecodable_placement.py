"""Garbage written over a placed binding, one of its Works and one of its Clusters (a bad
restore, a flipped bit, a buggy writer) is no deletion: with a real etcd, the executor's
controllers and simulated members, the members' Deployments stay as they are, while the
executor runs and across its restart (when its informers list the garbage and never saw the
good values), and re-applying the good values resumes everything with nothing moved."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from flotilla.aio.clock import RealClock
from flotilla.api import codec, keys, registry
from flotilla.api.bindings import Binding
from flotilla.api.keys import execution_namespace
from flotilla.api.v1 import work_pb2
from flotilla.member import MemberClient
from flotilla.runtime.manager import Manager
from flotilla.store import Store, Undecodable
from services.executor.__main__ import execution_clients
from services.executor.controllers import ExecutionManager, ExecutorConfig, ExecutorControllers
from tests.background import in_background
from tests.integration.test_executor_execution import deployment, join
from tests.sim_fixtures import StartSim

pytestmark = pytest.mark.integration

GARBAGE = b"\xff\xfe not a protobuf \x00\x01"
BINDING = "nginx-deployment"
WORK = keys.work_name("default", "nginx", "Deployment")
PLACEMENT = {"member1": 1, "member2": 2}
HOLD_SECONDS = 20.0


def etcd_key(rt: registry.ResourceType[Any], namespace: str, name: str) -> str:
    return keys.etcd_key(rt.resource, namespace, name)


BINDING_KEY = etcd_key(registry.RESOURCE_BINDING, "default", BINDING)
WORK_KEY = etcd_key(registry.WORK, execution_namespace("member1"), WORK)
CLUSTER_KEY = etcd_key(registry.CLUSTER, "", "member1")


@contextlib.asynccontextmanager
async def executor(store: Store) -> AsyncIterator[ExecutorControllers]:
    """Both sides of the executor on one manager, as the service runs them."""
    manager = Manager(store, RealClock(), compact_informers=True)
    clients = execution_clients(store, manager)
    ExecutionManager(store, RealClock(), clients.get, lambda c: c.spec.sync_mode != "Pull", manager=manager)
    controllers = ExecutorControllers(store, RealClock(), ExecutorConfig(workers=2), manager=manager)
    try:
        async with in_background(manager.run()):
            yield controllers
    finally:
        await clients.close()


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float = 60.0) -> None:
    async with asyncio.timeout(timeout):
        while not await check():
            await asyncio.sleep(0.1)


async def holds(check: Callable[[], Awaitable[None]], seconds: float) -> None:
    """`check` passes at every look for `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        await check()
        await asyncio.sleep(0.25)
    await check()


async def raw(store: Store, key: str) -> bytes:
    got = await store.client.get(key.encode())
    assert got is not None, key
    return bytes(got.value)


async def put_raw(store: Store, key: str, value: bytes) -> None:
    await store.client.put(key.encode(), value)


def place(binding: Binding) -> bool:
    if binding.spec.clusters:
        return False
    for name, replicas in PLACEMENT.items():
        binding.spec.clusters.add(name=name, replicas=replicas)
    return True


async def test_garbage_over_a_placed_binding_its_work_and_its_cluster_moves_nothing(
    store: Store, start_sim: StartSim, member_client: Callable[..., MemberClient]
) -> None:
    server = await start_sim("member1", "member2", clock=RealClock(), pod_ready_delay=0.05)
    members = {name: member_client(server, name) for name in PLACEMENT}
    for name in PLACEMENT:
        await join(store, server, name)
    await store.create(codec.from_dict({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "nginx", "namespace": "default",
                     "labels": {"propagationpolicy.karmada.io/permanent-id": "p-nginx"}},
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"}],
                 "placement": {"clusterAffinity": {"clusterNames": list(PLACEMENT)}}},
    }))
    await store.create(codec.from_dict(deployment(3)))

    async def deployed() -> dict[str, dict[str, Any] | None]:
        return {name: await client.get("apps/v1", "Deployment", "default", "nginx")
                for name, client in members.items()}

    async def running() -> bool:
        found = await deployed()
        return all(d is not None and d["spec"]["replicas"] == PLACEMENT[name]
                   and d.get("status", {}).get("readyReplicas") == PLACEMENT[name] for name, d in found.items())

    async with executor(store):
        # The scheduler's part, done here: 1 replica on member1, 2 on member2.
        async def binding_made() -> bool:
            return await store.try_get(registry.RESOURCE_BINDING, "default", BINDING) is not None

        await eventually(binding_made)
        await store.mutate(registry.RESOURCE_BINDING, "default", BINDING, place)
        await eventually(running)
        before = {name: (d["metadata"]["uid"], d["spec"]["replicas"])
                  for name, d in (await deployed()).items() if d is not None}
        good = {key: await raw(store, key) for key in (BINDING_KEY, WORK_KEY, CLUSTER_KEY)}
        for key in good:
            await put_raw(store, key, GARBAGE)

        async def untouched() -> None:
            now = {name: (d["metadata"]["uid"], d["spec"]["replicas"]) if d is not None else None
                   for name, d in (await deployed()).items()}
            assert now == before, "a member's Deployment was deleted, re-created or scaled"
            other = await store.get(registry.WORK, execution_namespace("member2"), WORK)
            assert not other.metadata.HasField("deletion_timestamp"), "member2's Work is being deleted"
            for key in good:
                assert await raw(store, key) == GARBAGE, f"{key} was written over"

        await holds(untouched, HOLD_SECONDS)

    # A fresh executor lists the garbage and never saw a good value under those keys.
    async with executor(store) as controllers:
        await eventually(lambda: _synced(controllers))
        with pytest.raises(Undecodable):
            controllers.bindings["ResourceBinding"].get(f"default/{BINDING}")
        await holds(untouched, HOLD_SECONDS / 2)

        # The good values again: the binding is back as it was, nothing moved, and it is
        # reconciled again (a change of its placement reaches member2's Deployment in place).
        for key, value in good.items():
            await put_raw(store, key, value)
        bindings = controllers.bindings["ResourceBinding"]

        async def restored() -> bool:
            binding = bindings.get(f"default/{BINDING}")
            return binding is not None and {t.name: t.replicas for t in binding.spec.clusters} == PLACEMENT

        await eventually(restored)
        await eventually(running)
        assert {name: (d["metadata"]["uid"], d["spec"]["replicas"])
                for name, d in (await deployed()).items() if d is not None} == before

        def scale(binding: Binding) -> None:
            for target in binding.spec.clusters:
                if target.name == "member2":
                    target.replicas = 3

        await store.mutate(registry.RESOURCE_BINDING, "default", BINDING, scale)

        async def scaled() -> bool:
            found = await deployed()
            two, one = found["member2"], found["member1"]
            uids = (two["metadata"]["uid"], one["metadata"]["uid"]) if two is not None and one is not None else ()
            same = uids == (before["member2"][0], before["member1"][0])
            return two is not None and two["spec"]["replicas"] == 3 and same

        await eventually(scaled)
        works = [await store.get(registry.WORK, execution_namespace(name), WORK) for name in PLACEMENT]
        assert all(isinstance(w, work_pb2.Work) and not w.metadata.HasField("deletion_timestamp") for w in works)


async def _synced(controllers: ExecutorControllers) -> bool:
    return all(informer.synced for informer in controllers.manager.informers)
