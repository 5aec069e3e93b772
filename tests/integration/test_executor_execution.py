"""The execution side against a real etcd and the simulator: Works applied to members,
member status and health back into Works, deletion that waits for an unreachable cluster."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import Any, cast

import pytest

from flotilla.aio.clock import RealClock
from flotilla.api import codec, registry
from flotilla.api.conditions import get_condition, set_condition
from flotilla.api.keys import execution_namespace
from flotilla.api.v1 import cluster_pb2, config_pb2, work_pb2
from flotilla.api.wellknown import EXECUTION_FINALIZER
from flotilla.clusterstatus.clients import MemberClients
from flotilla.member import MemberClient, load_kubeconfig
from flotilla.rules.cluster_secrets import secret_document
from flotilla.runtime.manager import Manager
from flotilla.store import Store
from flotilla.store.events import EventRecorder
from flotilla.store.informer import Informer
from services.executor.__main__ import execution_clients
from services.executor.controllers import ExecutionManager
from sim import SimServer
from tests.background import in_background
from tests.factories import EXAMPLE_FILES
from tests.sim_fixtures import StartSim
from tests.watching import Watch


def deployment(replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "nginx", "namespace": "default", "labels": {"app": "nginx"}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "nginx"}},
                 "template": {"metadata": {"labels": {"app": "nginx"}},
                              "spec": {"containers": [{"name": "nginx", "image": "nginx",
                                                       "resources": {"requests": {"cpu": "100m"}}}]}}},
    }


async def join(store: Store, server: SimServer, name: str) -> None:
    credentials = load_kubeconfig(server.kubeconfig_path(name))
    await store.create(codec.from_dict(secret_document(name, credentials)))
    cluster = await store.create(cast(cluster_pb2.Cluster, codec.from_dict({
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": name},
        "spec": {"apiEndpoint": credentials.server, "syncMode": "Push",
                 "secretRef": {"namespace": "karmada-cluster", "name": name}},
    })))
    await set_ready(store, cluster.metadata.name, "True")


async def set_ready(store: Store, name: str, status: str) -> None:
    def change(obj: cluster_pb2.Cluster) -> None:
        set_condition(obj.status.conditions, "Ready", status, "Test", "set by the test", RealClock().now())

    await store.mutate(registry.CLUSTER, "", name, change, status=True)


async def create_work(store: Store, cluster: str, manifest: dict[str, Any]) -> work_pb2.Work:
    work = work_pb2.Work(api_version="work.karmada.io/v1alpha1", kind="Work")
    work.metadata.name = "nginx-687f7fb96f"
    work.metadata.namespace = execution_namespace(cluster)
    work.metadata.finalizers.append(EXECUTION_FINALIZER)
    work.spec.workload.manifests.append(codec.raw_json(manifest))
    return await store.create(work)


async def joined_work(store: Store, server: SimServer, cluster: str, replicas: int) -> str:
    """Join `cluster` and give it a Work of the nginx Deployment; the Work's key."""
    await join(store, server, cluster)
    work = await create_work(store, cluster, deployment(replicas))
    return f"{work.metadata.namespace}/{work.metadata.name}"


@contextlib.asynccontextmanager
async def executing(store: Store, backoff: tuple[float, float] | None = None, as_served: bool = False,
                    wrap: Callable[[MemberClient], MemberClient] | None = None,
                    events: EventRecorder | None = None) -> AsyncIterator[ExecutionManager]:
    """`as_served`: with the executor service's own member clients instead of a test's; `wrap`:
    each member client as the test wants it to behave."""
    runtime = Manager(store, RealClock(), compact_informers=True)
    clients = execution_clients(store, runtime) if as_served else MemberClients(store, timeout=1.0)

    async def connect(cluster: cluster_pb2.Cluster) -> MemberClient:
        client = await clients.get(cluster)
        return wrap(client) if wrap is not None else client

    manager = ExecutionManager(store, RealClock(), connect, lambda c: c.spec.sync_mode != "Pull", manager=runtime,
                               events=events)
    if backoff is not None:
        manager.watches.backoff = backoff  # member watches reconnect quickly after a fault
    try:
        async with in_background(manager.run()):
            yield manager
    finally:
        await clients.close()


def health_of(informer: Informer[work_pb2.Work], key: str) -> tuple[str, int]:
    work = informer.get(key)
    if work is None or not work.status.manifest_statuses:
        return ("", -1)
    status = work.status.manifest_statuses[0]
    ready: int = json.loads(status.status or b"{}").get("readyReplicas", 0)
    return status.health, ready


def held(works: Informer[work_pb2.Work], key: str) -> work_pb2.Work:
    """The Work `key`, still there."""
    work = works.get(key)
    assert work is not None, f"the Work {key} is gone"
    return work


def applied_of(work: work_pb2.Work) -> tuple[str, str]:
    """The status and reason of the Work's Applied condition; empty without one."""
    condition = get_condition(work.status.conditions, "Applied")
    return (condition.status, condition.reason) if condition is not None else ("", "")


async def test_work_applied_collected_and_deleted_only_when_reachable(
    store: Store, start_sim: StartSim, member_client: Callable[..., MemberClient]
) -> None:
    server = await start_sim("member1", clock=RealClock(), pod_ready_delay=0.05)
    member = member_client(server)
    key = await joined_work(store, server, "member1", 2)
    async with executing(store) as manager:
        watch = Watch(manager.works)
        await watch.until(lambda: health_of(manager.works, key) == ("Healthy", 2))
        assert applied_of(held(manager.works, key)) == ("True", "AppliedSuccessful")
        deployed = await member.get("apps/v1", "Deployment", "default", "nginx")
        assert deployed is not None and deployed["spec"]["replicas"] == 2

        # A Lua customization decides health from now on; the seed one wants every replica ready.
        seed = next(p for p in EXAMPLE_FILES if p.name == "health-interpreter.yaml")
        ric = codec.from_dict(codec.load_yaml_documents(seed.read_text())[0])
        assert isinstance(ric, config_pb2.ResourceInterpreterCustomization)
        await store.create(ric)
        server.cluster("member1").set_app_fault("default", "nginx", healthy=False)
        await watch.until(lambda: health_of(manager.works, key)[0] == "Unhealthy")
        server.cluster("member1").set_app_fault("default", "nginx", healthy=True)
        await watch.until(lambda: health_of(manager.works, key) == ("Healthy", 2))

        # The cluster becomes unreachable; the Work is deleted and must wait for it.
        server.cluster("member1").set_fault("down")
        await set_ready(store, "member1", "False")
        namespace, name = key.split("/")
        await store.delete(registry.WORK, namespace, name)
        await watch.until(lambda: held(manager.works, key).metadata.HasField("deletion_timestamp"))
        await asyncio.sleep(0.3)  # several retries' worth: the Work must still be held
        assert EXECUTION_FINALIZER in held(manager.works, key).metadata.finalizers
        server.cluster("member1").set_fault("recover")
        assert await member.get("apps/v1", "Deployment", "default", "nginx") is not None
        await set_ready(store, "member1", "True")
        await watch.until(lambda: manager.works.get(key) is None)
        assert await member.get("apps/v1", "Deployment", "default", "nginx") is None


async def test_an_apply_slower_than_a_health_probe_is_waited_for(
    store: Store, start_sim: StartSim, caplog: pytest.LogCaptureFixture
) -> None:
    """The demo profile's probe timeout is 1 s. A busy member's answer to an apply can take
    longer, and giving up on it only sends the apply again (it was usually done all the same)."""
    server = await start_sim("member1", clock=RealClock(), pod_ready_delay=0.05)
    key = await joined_work(store, server, "member1", 1)
    server.cluster("member1").set_fault("slow", latency=1.2)
    async with executing(store, as_served=True) as manager:
        await Watch(manager.works).until(lambda: health_of(manager.works, key) == ("Healthy", 1), timeout=60)
        assert applied_of(held(manager.works, key)) == ("True", "AppliedSuccessful")
    given_up = [r.getMessage() for r in caplog.records if "timed out" in r.getMessage()]
    assert not given_up, "no request was given up on and sent again"


async def test_object_removed_in_the_member_is_applied_again(
    store: Store, start_sim: StartSim, member_client: Callable[..., MemberClient]
) -> None:
    server = await start_sim("member1", clock=RealClock(), pod_ready_delay=0.05)
    member = member_client(server)
    await join(store, server, "member1")
    work = await create_work(store, "member1", deployment(1))
    key = f"{work.metadata.namespace}/{work.metadata.name}"
    async with executing(store) as manager:
        watch = Watch(manager.works)
        await watch.until(lambda: health_of(manager.works, key) == ("Healthy", 1))
        await member.delete("apps/v1", "Deployment", "default", "nginx")
        await watch.until(lambda: health_of(manager.works, key) == ("Healthy", 1)
                          and applied_of(held(manager.works, key))[0] == "True"
                          and held(manager.works, key).status.manifest_statuses[0].status != b"{}")
        async with asyncio.timeout(10):
            while await member.get("apps/v1", "Deployment", "default", "nginx") is None:
                await asyncio.sleep(0.05)


async def test_member_get_shows_each_clusters_objects(
    store: Store, etcd: object, start_sim: StartSim, capsys: object
) -> None:
    from flotilla.cli.main import main

    server = await start_sim("member1", "member2", "member3", clock=RealClock(), pod_ready_delay=0.05)
    for name in ("member1", "member2", "member3"):
        await join(store, server, name)
    for name, replicas in (("member1", 1), ("member2", 2)):
        client = MemberClient(load_kubeconfig(server.kubeconfig_path(name)))
        await client.apply(deployment(replicas))
        await client.close()
    server.cluster("member3").set_fault("down")

    def run(*args: str) -> tuple[int, str, str]:
        code = main(["--etcd-endpoints", etcd.endpoint, *args])  # type: ignore[attr-defined]
        out, err = capsys.readouterr()  # type: ignore[attr-defined]
        return code, out, err

    code, out, err = await asyncio.to_thread(run, "member", "get", "deployments")
    assert code == 1  # one member could not be read
    assert err.strip().splitlines() == [err.strip()] and err.startswith("error: cluster member3:")
    header, *rows = out.strip().splitlines()
    assert header.split()[:3] == ["NAME", "CLUSTER", "READY"]
    assert [r.split()[:2] for r in rows] == [["nginx", "member1"], ["nginx", "member2"]]
    code, out, _ = await asyncio.to_thread(run, "member", "get", "deployments", "--clusters", "member2", "-o", "json")
    items = json.loads(out)["items"]
    assert code == 0 and [(i["cluster"], i["spec"]["replicas"]) for i in items] == [("member2", 2)]
