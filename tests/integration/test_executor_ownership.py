"""The execution side against a real etcd and the simulator, with a same-named object in the
member that Flotilla did not create (issue 32): left alone and reported under Abort, taken over
under Overwrite, never deleted with the Work; an object replaced between the read and the delete
is not deleted; an object that cannot be read is never taken for absent."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from prometheus_client import REGISTRY

from flotilla.aio.clock import RealClock
from flotilla.api import codec, registry
from flotilla.api.conditions import get_condition
from flotilla.api.keys import execution_namespace
from flotilla.api.v1 import core_pb2, meta_pb2, work_pb2
from flotilla.api.wellknown import CONFLICT_RESOLUTION_ANNOTATION, EXECUTION_FINALIZER, RB_PERMANENT_ID_LABEL
from flotilla.member import MemberClient
from flotilla.store import Store
from flotilla.store.events import EventRecorder, events_for
from services.executor.controllers import ExecutionManager
from sim import SimServer
from tests.integration.test_executor_execution import executing as executing_works
from tests.integration.test_executor_execution import held, join, set_ready
from tests.sim_fixtures import KubeHttp, StartSim
from tests.watching import Watch

BINDING_ID = "5b0c1f9e-7d7a-4c1e-9a57-2f1ed0a4c001"
WORK_NAME = "nginx-687f7fb96f"
NAMESPACE = execution_namespace("member1")
KEY = f"{NAMESPACE}/{WORK_NAME}"


def deployment(replicas: int, image: str, labels: dict[str, str],
               annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "nginx", "namespace": "default", "labels": labels, "annotations": annotations or {}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "nginx"}},
                 "template": {"metadata": {"labels": {"app": "nginx"}},
                              "spec": {"containers": [{"name": "nginx", "image": image}]}}},
    }


def foreign() -> dict[str, Any]:
    return deployment(1, "other-team/nginx:custom", {"app": "nginx", "owner": "other-team"})


def ours(resolution: str = "abort") -> dict[str, Any]:
    """The manifest the binding controller would write: the binding's label and the resolution."""
    return deployment(2, "nginx", {"app": "nginx", RB_PERMANENT_ID_LABEL: BINDING_ID},
                      {CONFLICT_RESOLUTION_ANNOTATION: resolution})


async def create_work(store: Store, manifest: dict[str, Any]) -> None:
    work = work_pb2.Work(api_version="work.karmada.io/v1alpha1", kind="Work")
    work.metadata.name, work.metadata.namespace = WORK_NAME, NAMESPACE
    work.metadata.finalizers.append(EXECUTION_FINALIZER)
    work.spec.workload.manifests.append(codec.raw_json(manifest))
    await store.create(work)


async def create_foreign(api: KubeHttp) -> dict[str, Any]:
    """As `kubectl create` would: a plain POST, nothing of Flotilla's on it."""
    created: dict[str, Any] = await api.ok("POST", "/apis/apps/v1/namespaces/default/deployments", foreign())
    return created


def applied(manager: ExecutionManager) -> tuple[str, str, str] | None:
    work = manager.works.get(KEY)
    condition = get_condition(work.status.conditions, "Applied") if work is not None else None
    return (condition.status, condition.reason, condition.message) if condition is not None else None


async def sync_failed(store: Store, obj: Any, timeout: float = 15) -> core_pb2.Event:
    """The SyncFailed Event about `obj`, once written (the reconcile writes it after the Work)."""
    async with asyncio.timeout(timeout):
        while True:
            found = [e for e in await events_for(store, obj) if e.reason == "SyncFailed"]
            if found:
                return found[0]
            await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def executing(store: Store, wrap: Callable[[MemberClient], MemberClient] | None = None
                    ) -> AsyncIterator[ExecutionManager]:
    async with executing_works(store, wrap=wrap, events=EventRecorder(store, "flotilla-executor")) as manager:
        yield manager


@contextlib.asynccontextmanager
async def applied_work(store: Store, resolution: str = "abort", status: str = "True",
                       wrap: Callable[[MemberClient], MemberClient] | None = None,
                       also: Callable[[work_pb2.Work], bool] = lambda _: True,
                       ) -> AsyncIterator[tuple[ExecutionManager, Watch]]:
    """The Work of `ours(resolution)` made and executed, once its Applied condition reads
    `status` (and `also` holds of the Work); the executor and a watch of its Works."""
    await create_work(store, ours(resolution))
    async with executing(store, wrap) as manager:
        watch = Watch(manager.works)
        await watch.until(lambda: (applied(manager) or ("",))[0] == status and also(held(manager.works, KEY)))
        yield manager, watch


def failed_deletes() -> float:
    """The executor's count of member1's nginx Deployment deletes that failed (each a try of the
    Work's deletion, retried with backoff)."""
    return REGISTRY.get_sample_value("flotilla_delete_resource_from_cluster_total", {
        "result": "error", "apiversion": "apps/v1", "kind": "Deployment", "member_cluster": "member1"}) or 0.0


async def polled(predicate: Callable[[], bool], what: str, timeout: float = 30) -> None:
    """Until `predicate()` holds, within `timeout` seconds; looked at every 20 ms, for what it
    reads (a metric) wakes nothing up."""
    try:
        async with asyncio.timeout(timeout):
            while not predicate():
                await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"not within {timeout} s: {what}") from None


@dataclass
class Member1:
    """A simulated member1, joined to the plane: its server, a client and raw HTTPS to it."""

    server: SimServer
    client: MemberClient
    api: KubeHttp


@pytest.fixture
async def member1(store: Store, start_sim: StartSim, member_client: Callable[..., MemberClient],
                  kube_http: Callable[..., KubeHttp]) -> Member1:
    server = await start_sim("member1", clock=RealClock(), pod_ready_delay=0.05)
    await join(store, server, "member1")
    return Member1(server, member_client(server), kube_http(server.cluster("member1")))


async def test_abort_leaves_a_foreign_object_alone_reports_it_and_does_not_delete_it(
        store: Store, member1: Member1) -> None:
    member = member1.client
    before = await create_foreign(member1.api)
    async with applied_work(store, status="False") as (manager, watch):
        _, reason, message = applied(manager)  # type: ignore[misc]
        assert reason == "AppliedFailed"
        assert message == (
            "Failed to apply all manifests (0/1): resource(kind=Deployment, default/nginx) already exists in the "
            "cluster member1 and the work.karmada.io/conflict-resolution strategy value is abort, Flotilla will "
            "not manage this resource")
        left = await member.get("apps/v1", "Deployment", "default", "nginx")
        assert left is not None
        assert left["metadata"]["uid"] == before["metadata"]["uid"]
        assert left["metadata"]["labels"] == {"app": "nginx", "owner": "other-team"}
        assert "annotations" not in left["metadata"] or not left["metadata"]["annotations"]
        assert left["spec"] == before["spec"] and left["spec"]["replicas"] == 1
        assert left["metadata"]["generation"] == 1  # never written

        # An Event says why, on the Work and on the resource template (Karmada's SyncFailed).
        template = meta_pb2.Unstructured(api_version="apps/v1", kind="Deployment")
        template.metadata.namespace, template.metadata.name = "default", "nginx"
        for obj in (manager.works.get(KEY), template):
            event = await sync_failed(store, obj)
            assert event.type == "Warning" and "already exists in the cluster member1" in event.message, event

        # The Work goes; the object it never owned stays.
        await store.delete(registry.WORK, NAMESPACE, WORK_NAME)
        await watch.until(lambda: manager.works.get(KEY) is None)
        left = await member.get("apps/v1", "Deployment", "default", "nginx")
        assert left is not None and left["metadata"]["uid"] == before["metadata"]["uid"]
        assert left["spec"]["template"]["spec"]["containers"][0]["image"] == "other-team/nginx:custom"


async def test_overwrite_takes_a_foreign_object_over_and_then_it_is_flotillas(
        store: Store, member1: Member1) -> None:
    member = member1.client
    before = await create_foreign(member1.api)
    async with applied_work(store, "overwrite") as (manager, watch):
        taken = await member.get("apps/v1", "Deployment", "default", "nginx")
        assert taken is not None and taken["metadata"]["uid"] == before["metadata"]["uid"]  # the same object
        assert taken["spec"]["replicas"] == 2
        assert taken["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx"
        labels, annotations = taken["metadata"]["labels"], taken["metadata"]["annotations"]
        assert labels[RB_PERMANENT_ID_LABEL] == BINDING_ID and labels["karmada.io/managed"] == "true"
        assert annotations["work.karmada.io/name"] == WORK_NAME

        # Flotilla's from then on: deleting the Work deletes it.
        await store.delete(registry.WORK, NAMESPACE, WORK_NAME)
        await watch.until(lambda: manager.works.get(KEY) is None)
        assert await member.get("apps/v1", "Deployment", "default", "nginx") is None


class ReplacedBeforeDelete(MemberClient):
    """The member client, but the object is replaced by a foreign one just before the first
    delete request goes out: the delete's preconditions name the object as it was read."""

    def __init__(self, inner: MemberClient, api: KubeHttp) -> None:
        super().__init__(inner.credentials, inner.timeout)
        self.api = api
        self.replaced = False

    async def delete(self, api_version: str, kind: str, namespace: str, name: str,
                     preconditions: dict[str, str] | None = None) -> bool:
        if not self.replaced:
            self.replaced = True
            await self.api.ok("DELETE", f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}")
            await create_foreign(self.api)
        return await super().delete(api_version, kind, namespace, name, preconditions)


async def test_an_object_replaced_between_the_read_and_the_delete_is_not_deleted(
        store: Store, member1: Member1) -> None:
    member = member1.client
    wrapped: list[ReplacedBeforeDelete] = []

    def wrap(client: MemberClient) -> MemberClient:
        if not wrapped:
            wrapped.append(ReplacedBeforeDelete(client, member1.api))
        return wrapped[0]

    async with applied_work(store, wrap=wrap) as (manager, watch):
        await store.delete(registry.WORK, NAMESPACE, WORK_NAME)
        await watch.until(lambda: manager.works.get(KEY) is None)
    assert wrapped[0].replaced
    left = await member.get("apps/v1", "Deployment", "default", "nginx")
    assert left is not None, "the foreign object made in between was deleted"
    assert left["metadata"]["labels"] == {"app": "nginx", "owner": "other-team"}
    await wrapped[0].close()


async def test_an_object_that_cannot_be_read_is_not_taken_for_absent(
        store: Store, member1: Member1) -> None:
    member = member1.client
    async with applied_work(store) as (manager, watch):
        # The member stops answering while the plane still holds it Ready: the Work's deletion
        # cannot read the object, and must wait rather than release the Work.
        member1.server.cluster("member1").set_fault("down")
        failed = failed_deletes()
        await store.delete(registry.WORK, NAMESPACE, WORK_NAME)
        await watch.until(lambda: held(manager.works, KEY).metadata.HasField("deletion_timestamp"))
        # Several tries of the deletion fail, the object unreadable: the Work must still be held
        # (a Work let go ends the wait at once, and fails below or in `held`).
        await polled(lambda: failed_deletes() >= failed + 3
                     or EXECUTION_FINALIZER not in held(manager.works, KEY).metadata.finalizers,
                     "three failed tries of the Work's deletion")
        assert EXECUTION_FINALIZER in held(manager.works, KEY).metadata.finalizers
        member1.server.cluster("member1").set_fault("recover")
        await set_ready(store, "member1", "True")
        await watch.until(lambda: manager.works.get(KEY) is None, timeout=30)
        assert await member.get("apps/v1", "Deployment", "default", "nginx") is None


async def test_an_object_no_longer_flotillas_is_not_reported_as_the_works_and_is_left_alone(
        store: Store, member1: Member1) -> None:
    member = member1.client
    async with applied_work(store, also=lambda work: bool(work.status.manifest_statuses)) as (manager, watch):
        # Another team takes the object: Flotilla's marks removed from it in place.
        api = member1.api
        taken = await api.ok("PATCH", "/apis/apps/v1/namespaces/default/deployments/nginx",
                             {"metadata": {"labels": {RB_PERMANENT_ID_LABEL: None, "karmada.io/managed": None}}},
                             content_type="application/merge-patch+json")
        refused = "Flotilla will not manage this resource"
        await watch.until(lambda: (applied(manager) or ("", "", ""))[2].endswith(refused))
        assert not held(manager.works, KEY).status.manifest_statuses  # its status is not the Work's
        left = await member.get("apps/v1", "Deployment", "default", "nginx")
        assert left is not None and left["metadata"]["labels"] == taken["metadata"]["labels"]
        assert left["metadata"]["generation"] == taken["metadata"]["generation"]  # not applied over
        assert RB_PERMANENT_ID_LABEL not in left["metadata"]["labels"]
