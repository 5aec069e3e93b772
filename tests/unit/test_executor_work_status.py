"""The work-status controller and a member object its executor has just created: absent from the
member's watch cache until the apply's own event arrives, it is waited for, not reported missing
(which would mark the Work not applied and have it applied again)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest

from flotilla.aio.clock import FakeClock
from flotilla.api import codec, keys, registry
from flotilla.api.conditions import get_condition, set_condition
from flotilla.api.v1 import cluster_pb2, work_pb2
from flotilla.interpreter.health import HealthInterpreter
from flotilla.member.watches import Kind, KindCache, MemberWatches
from flotilla.store import ObjectStore
from flotilla.store.informer import Informer
from services.executor.applied import AppliedGenerations, member_key
from services.executor.work_status import APPLY_REPORT_GRACE, WorkStatusReconciler
from tests.factories import make_cluster

CLUSTER = "member1"
DEPLOYMENT: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "Deployment",
                              "metadata": {"name": "web", "namespace": "default"}, "spec": {"replicas": 1}}
MEMBER = member_key(CLUSTER, DEPLOYMENT)
MANAGED = {"karmada.io/managed": "true"}  # as the executor stamps what it applies


def as_applied(labels: dict[str, str] = MANAGED, **fields: Any) -> dict[str, Any]:
    """The Deployment in the member's cache, with `labels` and, say, a status."""
    return {**DEPLOYMENT, "metadata": {**DEPLOYMENT["metadata"], "generation": 1, "labels": labels}, **fields}
WORK_KEY = f"{keys.execution_namespace(CLUSTER)}/web"


class OneCache:
    """The member's watch cache of Deployments, listed and empty to begin with."""

    def __init__(self) -> None:
        self.deployments = KindCache()
        self.deployments.replace([])

    def cache(self, cluster: cluster_pb2.Cluster, kind: Kind) -> KindCache | None:
        return self.deployments


def ready_cluster() -> cluster_pb2.Cluster:
    cluster = make_cluster(CLUSTER)
    cluster.status.conditions.add(type="Ready", status="True")
    return cluster


def new_work() -> work_pb2.Work:
    work = work_pb2.Work(api_version="work.karmada.io/v1alpha1", kind="Work")
    work.metadata.name, work.metadata.namespace = "web", keys.execution_namespace(CLUSTER)
    work.spec.workload.manifests.append(codec.raw_json(DEPLOYMENT))
    return work


async def mark_applied(store: ObjectStore, clock: FakeClock) -> None:
    def change(work: work_pb2.Work) -> None:
        set_condition(work.status.conditions, "Applied", "True", "AppliedSuccessful",
                      "Manifest has been successfully applied", clock.now(), work.metadata.generation)

    await store.mutate(registry.WORK, keys.execution_namespace(CLUSTER), "web", change, status=True)


@contextlib.asynccontextmanager
async def reconciler(store: ObjectStore, clock: FakeClock) -> AsyncIterator[
        tuple[WorkStatusReconciler, OneCache, AppliedGenerations]]:
    await store.create(ready_cluster())
    await store.create(new_work())
    await mark_applied(store, clock)
    works, clusters = Informer(store, registry.WORK), Informer(store, registry.CLUSTER)
    tasks = [asyncio.create_task(works.run()), asyncio.create_task(clusters.run())]
    await works.wait_synced()
    await clusters.wait_synced()
    caches, applied = OneCache(), AppliedGenerations()
    try:
        yield (WorkStatusReconciler(store, clock, works, clusters, cast(MemberWatches, caches), HealthInterpreter(),
                                    applied=applied), caches, applied)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def applied_condition(store: ObjectStore) -> str:
    work = await store.get(registry.WORK, keys.execution_namespace(CLUSTER), "web")
    condition = get_condition(work.status.conditions, "Applied")
    return condition.status if condition is not None else ""


@pytest.mark.asyncio
async def test_an_object_just_applied_is_waited_for_then_reported(store: ObjectStore) -> None:
    clock = FakeClock()
    async with reconciler(store, clock) as (statuses, caches, applied):
        applied.record(MEMBER, {"metadata": {"generation": 1}}, clock.monotonic())
        result = await statuses.reconcile(WORK_KEY)
        assert result is not None and result.requeue_after == pytest.approx(APPLY_REPORT_GRACE)
        assert await applied_condition(store) == "True"

        caches.deployments.apply("ADDED", as_applied(status={"observedGeneration": 1, "replicas": 1,
                                                             "readyReplicas": 1}))
        assert await statuses.reconcile(WORK_KEY) is None
        work = await store.get(registry.WORK, keys.execution_namespace(CLUSTER), "web")
        assert [s.identifier.name for s in work.status.manifest_statuses] == ["web"]
        assert await applied_condition(store) == "True"
        assert applied.unreported_for(MEMBER, clock.monotonic()) is None


@pytest.mark.asyncio
async def test_an_object_never_reported_is_missing_after_the_grace(store: ObjectStore) -> None:
    clock = FakeClock()
    async with reconciler(store, clock) as (statuses, _, applied):
        applied.record(MEMBER, {"metadata": {"generation": 1}}, clock.monotonic())
        await clock.advance(APPLY_REPORT_GRACE / 2)
        result = await statuses.reconcile(WORK_KEY)
        assert result is not None and result.requeue_after == pytest.approx(APPLY_REPORT_GRACE / 2)
        await clock.advance(APPLY_REPORT_GRACE / 2)
        assert await statuses.reconcile(WORK_KEY) is None
        assert await applied_condition(store) == "False"


@pytest.mark.asyncio
async def test_an_object_deleted_after_its_apply_was_reported_is_missing_at_once(store: ObjectStore) -> None:
    clock = FakeClock()
    async with reconciler(store, clock) as (statuses, _, applied):
        applied.record(MEMBER, {"metadata": {"generation": 1}}, clock.monotonic())
        applied.reported(MEMBER)  # the ADDED event, then the DELETED one: the cache no longer holds it
        assert await statuses.reconcile(WORK_KEY) is None
        assert await applied_condition(store) == "False"


@pytest.mark.asyncio
async def test_an_object_replaced_by_one_flotilla_does_not_manage_is_not_the_works(store: ObjectStore) -> None:
    clock = FakeClock()
    async with reconciler(store, clock) as (statuses, caches, applied):
        applied.record(MEMBER, {"metadata": {"generation": 1}}, clock.monotonic())
        caches.deployments.apply("ADDED", as_applied({"owner": "other-team"},
                                                     status={"observedGeneration": 1, "readyReplicas": 1}))
        assert await statuses.reconcile(WORK_KEY) is None
        work = await store.get(registry.WORK, keys.execution_namespace(CLUSTER), "web")
        assert not work.status.manifest_statuses  # its status is not reported as the Work's
        condition = get_condition(work.status.conditions, "Applied")
        assert (condition.status, condition.reason, condition.message) == (
            "False", "AppliedFailed",
            "Manifest is held by an object Flotilla does not manage in the member cluster: Deployment default/web")
